//! Where a key of a YAML document stands (line and column), for errors found after serde has
//! already turned the document into values.

use std::collections::HashMap;

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::Marker;

/// One step of a path into the document: a mapping key or a sequence index.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Seg {
    Key(String),
    Index(usize),
}

/// A path such as `faults[2].schedule.every`.
pub type Path = Vec<Seg>;

pub fn path_to_string(path: &[Seg]) -> String {
    let mut s = String::new();
    for seg in path {
        match seg {
            Seg::Key(k) => {
                if !s.is_empty() {
                    s.push('.');
                }
                s.push_str(k);
            }
            Seg::Index(i) => s.push_str(&format!("[{i}]")),
        }
    }
    s
}

/// The 1-based line and column of every key and sequence item of a document.
#[derive(Debug, Default)]
pub struct Locations {
    at: HashMap<Path, (usize, usize)>,
    /// The text of every scalar value, by its path (to find the key that holds a value an
    /// error quotes).
    values: HashMap<Path, String>,
}

impl Locations {
    /// Index a document. A document that does not parse gives an empty index (serde reports
    /// the syntax error with its own location).
    pub fn index(text: &str) -> Locations {
        let mut rx = Receiver::default();
        let mut parser = Parser::new_from_str(text);
        if parser.load(&mut rx, false).is_err() {
            return Locations::default();
        }
        Locations {
            at: rx.at,
            values: rx.values,
        }
    }

    /// The paths under `under` whose scalar value is `value`, in document order.
    pub fn holding(&self, under: &[Seg], value: &str) -> Vec<Path> {
        let mut found: Vec<Path> = self
            .values
            .iter()
            .filter(|(p, v)| p.starts_with(under) && v.as_str() == value)
            .map(|(p, _)| p.clone())
            .collect();
        found.sort_by_key(|p| self.at.get(p).copied());
        found
    }

    /// Line and column of `path`, or of its nearest ancestor that is known.
    pub fn find(&self, path: &[Seg]) -> Option<(usize, usize)> {
        let mut p = path.to_vec();
        loop {
            if let Some(lc) = self.at.get(&p) {
                return Some(*lc);
            }
            p.pop()?;
        }
    }
}

enum Frame {
    /// In a mapping; `pending` holds the key whose value comes next.
    Map {
        pending: Option<String>,
    },
    Seq {
        next: usize,
    },
}

#[derive(Default)]
struct Receiver {
    stack: Vec<Frame>,
    path: Path,
    at: HashMap<Path, (usize, usize)>,
    values: HashMap<Path, String>,
}

impl Receiver {
    /// Called when a node starts: returns true when the node is a mapping key.
    fn node_start(&mut self, mark: Marker, scalar: Option<&str>) -> bool {
        match self.stack.last_mut() {
            Some(Frame::Map { pending }) => {
                if pending.is_none() {
                    // This node is a key.
                    if let Some(k) = scalar {
                        *pending = Some(k.to_string());
                        let mut p = self.path.clone();
                        p.push(Seg::Key(k.to_string()));
                        self.at.entry(p).or_insert((mark.line(), mark.col() + 1));
                    } else {
                        *pending = Some(String::new());
                    }
                    return true;
                }
                let k = pending.clone().unwrap_or_default();
                self.path.push(Seg::Key(k));
                false
            }
            Some(Frame::Seq { next }) => {
                let i = *next;
                *next += 1;
                self.path.push(Seg::Index(i));
                self.at
                    .entry(self.path.clone())
                    .or_insert((mark.line(), mark.col() + 1));
                false
            }
            None => false,
        }
    }

    /// Called when a (value) node ends.
    fn node_end(&mut self) {
        match self.stack.last_mut() {
            Some(Frame::Map { pending }) => {
                *pending = None;
                self.path.pop();
            }
            Some(Frame::Seq { .. }) => {
                self.path.pop();
            }
            None => {}
        }
    }
}

impl MarkedEventReceiver for Receiver {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        match ev {
            Event::Scalar(ref v, ..) if !self.node_start(mark, Some(v)) => {
                self.values.insert(self.path.clone(), v.clone());
                self.node_end();
            }
            Event::Alias(_) if !self.node_start(mark, None) => {
                self.node_end();
            }
            Event::MappingStart(..) => {
                let is_key = self.node_start(mark, None);
                if is_key {
                    // A complex key: index nothing inside it.
                    self.path.push(Seg::Key(String::new()));
                }
                self.stack.push(Frame::Map { pending: None });
            }
            Event::SequenceStart(..) => {
                let is_key = self.node_start(mark, None);
                if is_key {
                    self.path.push(Seg::Key(String::new()));
                }
                self.stack.push(Frame::Seq { next: 0 });
            }
            Event::MappingEnd | Event::SequenceEnd => {
                self.stack.pop();
                self.node_end();
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(s: &str) -> Seg {
        Seg::Key(s.to_string())
    }

    #[test]
    fn finds_nested_keys_and_items() {
        let text = "name: x\nworkload:\n  txn_size: 0\nfaults:\n  - kind: pause\n    duration: 5s\n  - kind: topic_unload\n";
        let l = Locations::index(text);
        assert_eq!(l.find(&[k("name")]), Some((1, 1)));
        assert_eq!(l.find(&[k("workload"), k("txn_size")]), Some((3, 3)));
        assert_eq!(
            l.find(&[k("faults"), Seg::Index(1)]).map(|(line, _)| line),
            Some(7)
        );
        assert_eq!(
            l.find(&[k("faults"), Seg::Index(0), k("duration")]),
            Some((6, 5))
        );
        // Unknown child: falls back to the parent.
        assert_eq!(l.find(&[k("workload"), k("nope")]), Some((2, 1)));
        // The key holding a value.
        assert_eq!(
            l.holding(&[k("faults")], "5s"),
            vec![vec![k("faults"), Seg::Index(0), k("duration")]]
        );
        assert!(l.holding(&[k("workload")], "5s").is_empty());
    }

    #[test]
    fn flow_style_is_indexed() {
        let l = Locations::index("cluster: { topology: cluster, brokers: 2 }\n");
        assert_eq!(l.find(&[k("cluster"), k("brokers")]), Some((1, 31)));
    }

    #[test]
    fn path_strings() {
        assert_eq!(
            path_to_string(&[k("faults"), Seg::Index(2), k("schedule")]),
            "faults[2].schedule"
        );
    }
}
