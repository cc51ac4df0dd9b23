import random

import numpy as np

from lattices.kernel_containers import insert, lookup, new_table, push


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
        keys, values, count = insert(keys, values, count, key, value)
        expected[key] = value
    assert count == len(expected) and keys.size >= 2 * count
    assert all(lookup(keys, values, key) == value for key, value in expected.items())
    assert lookup(keys, values, 2 ** 62 + 7) == -1


def test_push_grows_an_array_and_keeps_what_it_held():
    array, values = np.empty(0, np.int64), list(range(100))
    for size, value in enumerate(values):
        array = push(array, size, value)
    assert array[:100].tolist() == values and array.size >= 100
