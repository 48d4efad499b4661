use super::*;

#[test]
fn payload_is_the_number_then_padding() {
    assert_eq!(payload(42, 0), b"42");
    assert_eq!(payload(42, 5), b"42   ");
    assert_eq!(
        crate::checker::parse_number(&payload(1234, 100)),
        Some(1234)
    );
}

#[test]
fn chunks_skip_sabotaged_numbers() {
    let none = BTreeSet::new();
    assert_eq!(take_chunk(0, 10, 4, &none), (vec![(0, 4)], 4));
    assert_eq!(take_chunk(8, 10, 4, &none), (vec![(8, 10)], 10));
    let skip: BTreeSet<u64> = [2, 4, 5].into_iter().collect();
    assert_eq!(take_chunk(0, 10, 3, &skip), (vec![(0, 2), (3, 4)], 6));
    assert_eq!(take_chunk(6, 10, 3, &skip), (vec![(6, 9)], 9));
}
