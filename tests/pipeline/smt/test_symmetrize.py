from pipeline.smt.symmetrize import grow_diag_final_and


def test_grow_diag_adds_neighbours_and_final_and_needs_both_words_unaligned():
    # intersection (0,0), (1,1); (2,2) grows diagonally from (1,1); (4,0) is only in the forward direction and
    # its target word 0 is aligned, so FINAL-AND skips it; (3,4) has both words unaligned, so FINAL-AND adds it
    forward = {(0, 0), (1, 1), (2, 2), (4, 0)}
    reverse = {(0, 0), (1, 1), (3, 4)}
    assert grow_diag_final_and(forward, reverse) == [(0, 0), (1, 1), (2, 2), (3, 4)]


def test_a_union_point_between_two_aligned_words_is_not_grown():
    forward = {(0, 0), (1, 1), (2, 2), (1, 2)}
    reverse = {(0, 0), (1, 1), (2, 2)}
    assert grow_diag_final_and(forward, reverse) == [(0, 0), (1, 1), (2, 2)]


def test_growth_chains_through_points_added_in_the_same_sweep():
    # from (1,1): (2,1) (source 2 new), then (2,2) (target 2 new); from (2,1): (3,2); from (2,2): (3,3)
    forward = {(0, 0), (1, 1), (2, 1), (3, 3)}
    reverse = {(0, 0), (1, 1), (2, 2), (3, 2)}
    assert grow_diag_final_and(forward, reverse) == [(0, 0), (1, 1), (2, 1), (2, 2), (3, 2), (3, 3)]


def test_one_to_many_in_one_direction_only_keeps_the_intersection_plus_neighbours():
    # forward: source 0 -> targets 0, 1, 2; reverse: only 0-0. (0,1) neighbours (0,0) and target 1 is unaligned,
    # then (0,2) neighbours (0,1) and target 2 is unaligned: both grow.
    assert grow_diag_final_and({(0, 0), (0, 1), (0, 2)}, {(0, 0)}) == [(0, 0), (0, 1), (0, 2)]
    # a non-adjacent point whose source word is aligned never comes in
    assert grow_diag_final_and({(0, 0), (0, 2)}, {(0, 0)}) == [(0, 0)]


def test_empty_and_disjoint():
    assert grow_diag_final_and([], []) == []
    # nothing in common: FINAL-AND takes forward points first, then reverse points with both words unaligned
    assert grow_diag_final_and({(0, 1)}, {(0, 0), (1, 1)}) == [(0, 1)]
