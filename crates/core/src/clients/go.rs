//! The official Go client's answers to `Transaction.Commit` (github.com/apache/pulsar-client-go).
//! Filled in from the client's source by the Go driver's author; a class not listed is
//! ambiguous.

use super::Row;

pub const COMMIT_ROWS: &[Row] = &[];
