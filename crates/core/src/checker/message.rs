//! One message as the read-back sees it: where it was read ([`MsgId`]) and the number its
//! payload carries ([`parse_number`]).

use std::fmt;

use serde::{Deserialize, Serialize};

/// Where a message was read: partition (-1 for a non-partitioned topic), ledger, entry, and the
/// index inside a batch (-1 when not batched).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct MsgId {
    pub partition: i32,
    pub ledger: u64,
    pub entry: u64,
    pub batch: i32,
}

impl fmt::Display for MsgId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.ledger, self.entry, self.partition)?;
        if self.batch >= 0 {
            write!(f, ":{}", self.batch)?;
        }
        Ok(())
    }
}

/// Parse a payload: the number in decimal ASCII at its start, optionally followed by a
/// non-digit (padding). `None` when it does not start with a number.
#[inline]
pub fn parse_number(payload: &[u8]) -> Option<u64> {
    // At most 19 digits (20 or more is refused), and 19 digits cannot overflow a u64: no
    // checked arithmetic is needed, only a look at the 20th byte.
    let head = &payload[..payload.len().min(20)];
    let mut v: u64 = 0;
    let mut digits = 0;
    for &b in head {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        v = v.wrapping_mul(10).wrapping_add(u64::from(d));
        digits += 1;
    }
    if digits == 0 || digits > 19 {
        return None;
    }
    // Leading zeros would make two payloads mean one number: refuse them.
    if digits > 1 && payload[0] == b'0' {
        return None;
    }
    Some(v)
}

#[cfg(test)]
mod tests;
