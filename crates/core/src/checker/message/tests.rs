use super::*;

#[test]
fn parses_numbers_with_padding() {
    assert_eq!(parse_number(b"123"), Some(123));
    assert_eq!(parse_number(b"123 xxxxx"), Some(123));
    assert_eq!(parse_number(b"0"), Some(0));
    assert_eq!(parse_number(b"007"), None);
    assert_eq!(parse_number(b"x1"), None);
    assert_eq!(parse_number(b""), None);
    assert_eq!(parse_number(b"99999999999999999999"), None);
}

#[test]
fn parse_matches_the_plain_definition() {
    // The plain definition: the leading digits, at most 19 of them, no leading zero.
    fn plain(p: &[u8]) -> Option<u64> {
        let d: Vec<u8> = p
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .copied()
            .collect();
        if d.is_empty() || d.len() > 19 || (d.len() > 1 && d[0] == b'0') {
            return None;
        }
        std::str::from_utf8(&d).ok()?.parse().ok()
    }
    let mut r = crate::seed::Rng::new(3);
    let alphabet = b"0123456789 x/:\xff";
    for _ in 0..20_000 {
        let len = r.between(0, 24) as usize;
        let p: Vec<u8> = (0..len)
            .map(|_| {
                if r.below(4) == 0 {
                    alphabet[r.below(alphabet.len() as u64) as usize]
                } else {
                    b'0' + r.below(10) as u8
                }
            })
            .collect();
        assert_eq!(
            parse_number(&p),
            plain(&p),
            "{:?}",
            String::from_utf8_lossy(&p)
        );
    }
    for s in [
        "9999999999999999999",
        "18446744073709551615",
        "1 ",
        "42 padding",
    ] {
        assert_eq!(parse_number(s.as_bytes()), plain(s.as_bytes()), "{s}");
    }
}
