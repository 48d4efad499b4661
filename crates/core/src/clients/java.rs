//! The official Java client's answers to `Transaction.commit()` (org.apache.pulsar:pulsar-client).
//! Filled in from the client's source by the Java driver's author; a class not listed is
//! ambiguous.

use super::Row;

pub const COMMIT_ROWS: &[Row] = &[];
