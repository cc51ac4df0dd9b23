import random

import numpy as np

from lattices.kernel_containers import lookup, new_table, room, set_new, table_room


def test_the_table_agrees_with_a_dict_through_growth_and_collisions():
    rng = random.Random(3)
    keys, values = new_table(4)  # grows many times
    count, expected = 0, {}
    # clustered and spread keys: multiples of 2^32 collide in the low bits, large ones test the hash's top bits
    candidates = [k << 32 for k in range(200)] + [rng.randrange(2 ** 62) for _ in range(2000)] + list(range(300))
    for key in candidates:
        if key in expected:
            continue
        assert lookup(keys, values, key) == -1
        value = rng.randrange(10 ** 9)
        keys, values = table_room(keys, values, count + 1)
        set_new(keys, values, key, value)
        count += 1
        expected[key] = value
    assert keys.size >= 2 * count
    assert all(lookup(keys, values, key) == value for key, value in expected.items())
    assert lookup(keys, values, 2 ** 62 + 7) == -1


def test_room_grows_an_array_and_keeps_what_it_held():
    array = np.arange(5, dtype=np.int64)
    assert room(array, 5) is array
    grown = room(array, 100)
    assert grown.size >= 100 and grown[:5].tolist() == list(range(5))
    rows = room(np.ones((3, 2)), 7)
    assert rows.shape[0] >= 7 and rows.shape[1] == 2 and rows[:3].tolist() == [[1.0, 1.0]] * 3
