use super::*;

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pc-journal-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    d
}

fn entry(attempt: u64, a: u64, b: u64, resend_of: Option<u64>) -> Entry {
    Entry {
        attempt,
        txn: TxnId {
            most: 0,
            least: attempt,
        },
        numbers: vec![(a, b)],
        resend_of,
    }
}

fn attempts(l: &Loaded) -> Vec<u64> {
    l.entries.iter().map(|e| e.attempt).collect()
}

/// The byte offsets at which the records of the journal file in `d` start, and its length.
fn record_offsets(d: &Path) -> (Vec<usize>, usize) {
    let bytes = fs::read(d.join(FILE)).unwrap();
    let mut at = format::MAGIC.len();
    let mut out = Vec::new();
    while at < bytes.len() {
        out.push(at);
        let len = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        at += 8 + len;
    }
    (out, bytes.len())
}

/// The records of the journal file in `d`, as written (none of `load`'s folding).
fn raw_records(d: &Path) -> Vec<Record> {
    let bytes = fs::read(d.join(FILE)).unwrap();
    let (offsets, len) = record_offsets(d);
    offsets
        .iter()
        .map(|&at| {
            let n = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
            assert!(at + 8 + n <= len);
            serde_json::from_slice(&bytes[at + 8..at + 8 + n]).unwrap()
        })
        .collect()
}

#[tokio::test]
async fn records_clears_and_loads() {
    let j = Journal::open(&dir("basic")).unwrap();
    j.set_cursor(300).await.unwrap();
    j.record(&entry(1, 0, 100, None)).await.unwrap();
    j.record(&entry(2, 100, 200, None)).await.unwrap();
    j.record(&entry(3, 200, 300, None)).await.unwrap();
    j.clear(2).await.unwrap();
    j.clear(2).await.unwrap();
    let l = j.load().unwrap();
    assert_eq!(l.cursor, 300);
    assert_eq!(attempts(&l), vec![1, 3]);
    assert_eq!(l.damage, None);
    assert_eq!(next_number(l.cursor, &l.entries), 300);
    // Every record went through a sync.
    let c = j.counters();
    assert_eq!(c.records, 6);
    assert!(c.syncs >= 1 && c.syncs <= 6, "{c:?}");
}

#[tokio::test]
async fn a_journal_reopened_reads_the_same() {
    let d = dir("reopen");
    {
        let j = Journal::open(&d).unwrap();
        j.submit(vec![
            Record::Opened(entry(1, 0, 100, None)),
            Record::Cursor { next: 100 },
        ])
        .synced()
        .await
        .unwrap();
        j.record(&entry(2, 100, 200, None)).await.unwrap();
        j.clear(1).await.unwrap();
    }
    let j = Journal::open(&d).unwrap();
    let l = j.load().unwrap();
    assert_eq!((l.cursor, attempts(&l), l.last_attempt), (100, vec![2], 2));
    assert_eq!(l.entries[0], entry(2, 100, 200, None));
    assert_eq!(l.damage, None);
    // Appending after the reopen continues the same file.
    j.clear(2).await.unwrap();
    assert!(j.load().unwrap().entries.is_empty());
    assert_eq!(read(&d).unwrap().entries, vec![]);
}

#[tokio::test]
async fn a_resent_attempt_supersedes_its_original() {
    let j = Journal::open(&dir("resend")).unwrap();
    j.record(&entry(1, 0, 100, None)).await.unwrap();
    j.record(&entry(5, 0, 100, Some(1))).await.unwrap();
    assert_eq!(j.load().unwrap().entries, vec![entry(5, 0, 100, Some(1))]);
}

#[test]
fn next_number_covers_entries_beyond_the_cursor() {
    // Crash after journaling [100, 200) but before the cursor moved.
    assert_eq!(next_number(100, &[entry(2, 100, 200, None)]), 200);
    assert_eq!(next_number(0, &[]), 0);
}

#[tokio::test]
async fn the_cursor_is_the_last_recorded() {
    let d = dir("cursor");
    let j = Journal::open(&d).unwrap();
    assert_eq!(j.load().unwrap().cursor, 0);
    j.set_cursor(100).await.unwrap();
    j.set_cursor(250).await.unwrap();
    assert_eq!(j.load().unwrap().cursor, 250);
    // A cursor queued with its attempt (as a worker does) is read with it.
    j.submit(vec![
        Record::Opened(entry(4, 250, 300, None)),
        Record::Cursor { next: 300 },
    ])
    .synced()
    .await
    .unwrap();
    let l = j.load().unwrap();
    assert_eq!((l.cursor, attempts(&l)), (300, vec![4]));
}

#[tokio::test]
async fn the_last_attempt_counts_superseded_and_final_entries() {
    let d = dir("last");
    let j = Journal::open(&d).unwrap();
    assert_eq!(j.last_attempt().unwrap(), 0);
    j.set_cursor(100).await.unwrap();
    j.record(&entry(3, 0, 100, None)).await.unwrap();
    j.record(&entry(7, 0, 100, Some(3))).await.unwrap();
    // Superseded: `load` leaves 3 out, but 7 is still the highest.
    assert_eq!(j.last_attempt().unwrap(), 7);
    j.clear(7).await.unwrap();
    j.record(&entry(5, 0, 100, None)).await.unwrap();
    assert_eq!(j.last_attempt().unwrap(), 7);
}

/// Many senders at once: the writer syncs what queued while it was busy in one go, and every
/// sender returns only after the sync that covers its record.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn group_commit_syncs_many_records_at_once() {
    let d = dir("group");
    let j = Journal::open(&d).unwrap();
    const N: u64 = 64;
    j.inner.shared.hold(true);
    let mut tasks = Vec::new();
    for a in 1..=N {
        let j = j.clone();
        tasks.push(tokio::spawn(async move {
            j.record(&entry(a, a * 10, a * 10 + 10, None)).await
        }));
    }
    // Every record is queued while the writer is held (at most the first batch taken).
    while j.inner.shared.queued() < N {
        tokio::task::yield_now().await;
    }
    assert_eq!(
        j.counters().syncs,
        0,
        "nothing synced while the writer is held"
    );
    assert!(
        tasks.iter().all(|t| !t.is_finished()),
        "a sender returned before its sync"
    );
    j.inner.shared.hold(false);
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    let c = j.counters();
    assert_eq!(c.records, N);
    assert!(c.syncs <= 2, "{N} records took {} syncs", c.syncs);
    let l = j.load().unwrap();
    assert_eq!(l.entries.len() as u64, N);
}

#[tokio::test]
async fn a_torn_last_record_ends_the_read_with_a_warning() {
    let d = dir("torn");
    {
        let j = Journal::open(&d).unwrap();
        j.set_cursor(200).await.unwrap();
        j.record(&entry(1, 0, 100, None)).await.unwrap();
        j.record(&entry(2, 100, 200, None)).await.unwrap();
    }
    let (offsets, len) = record_offsets(&d);
    let last = *offsets.last().unwrap();
    // Cut the last record in the middle of its payload.
    let cut_at = (last + len) / 2;
    let f = fs::OpenOptions::new()
        .write(true)
        .open(d.join(FILE))
        .unwrap();
    f.set_len(cut_at as u64).unwrap();
    drop(f);

    // Read without opening: the records before it, and the damage.
    let l = read(&d).unwrap();
    assert_eq!((l.cursor, attempts(&l)), (200, vec![1]));
    let dmg = l.damage.clone().unwrap();
    assert_eq!(dmg.kind, DamageKind::Torn);
    assert_eq!(dmg.offset, last as u64);
    assert_eq!(dmg.ignored, (cut_at - last) as u64);
    let msg = dmg.to_string();
    assert!(
        msg.contains(&format!("stopped reading at byte {last}")),
        "{msg}"
    );
    assert!(msg.contains("torn"), "{msg}");

    // Opening cuts the torn tail (saved beside it) and reports it; new records then follow
    // the sound ones and are read.
    let j = Journal::open(&d).unwrap();
    let l = j.load().unwrap();
    assert_eq!(attempts(&l), vec![1]);
    let dmg = l.damage.unwrap();
    assert_eq!((dmg.kind, dmg.offset), (DamageKind::Torn, last as u64));
    let saved = dmg.saved.unwrap();
    assert_eq!(fs::read(&saved).unwrap().len(), cut_at - last);
    assert_eq!(fs::metadata(d.join(FILE)).unwrap().len(), last as u64);
    j.record(&entry(3, 200, 300, None)).await.unwrap();
    let l = read(&d).unwrap();
    assert_eq!((attempts(&l), l.damage), (vec![1, 3], None));
}

/// A torn tail is what a crash leaves and a resume goes on; a corrupt record loses the records
/// after it, so a resume is refused (it could resend committed numbers or leave some out, which
/// the verdict would blame on Pulsar).
#[tokio::test]
async fn a_resume_goes_on_after_a_torn_tail_and_is_refused_after_corruption() {
    let d = dir("resumable");
    {
        let j = Journal::open(&d).unwrap();
        j.record(&entry(1, 0, 100, None)).await.unwrap();
        j.record(&entry(2, 100, 200, None)).await.unwrap();
        j.record(&entry(3, 200, 300, None)).await.unwrap();
    }
    let (offsets, len) = record_offsets(&d);
    assert_eq!(offsets.len(), 3);
    let sound = fs::read(d.join(FILE)).unwrap();
    assert!(read(&d).unwrap().resumable().is_ok());
    fs::write(d.join(FILE), &sound[..(offsets[2] + len) / 2]).unwrap();
    assert!(read(&d).unwrap().resumable().is_ok(), "a torn tail");
    let mut bad = sound.clone();
    bad[offsets[1] + 8 + 5] ^= 0x20;
    fs::write(d.join(FILE), &bad).unwrap();
    let err = read(&d).unwrap().resumable().unwrap_err();
    assert!(matches!(err, JournalError::Damaged { .. }), "{err}");
    assert!(err.to_string().starts_with("cannot resume: "), "{err}");
}

#[tokio::test]
async fn a_zero_filled_tail_reads_as_torn() {
    let d = dir("zeros");
    {
        let j = Journal::open(&d).unwrap();
        j.record(&entry(1, 0, 100, None)).await.unwrap();
    }
    let (_, len) = record_offsets(&d);
    let f = fs::OpenOptions::new()
        .write(true)
        .open(d.join(FILE))
        .unwrap();
    f.set_len(len as u64 + 300).unwrap();
    drop(f);
    let l = read(&d).unwrap();
    assert_eq!(attempts(&l), vec![1]);
    let dmg = l.damage.unwrap();
    assert_eq!(
        (dmg.kind, dmg.offset, dmg.ignored),
        (DamageKind::Torn, len as u64, 300)
    );
}

#[tokio::test]
async fn a_corrupt_middle_record_stops_the_read_there() {
    let d = dir("corrupt");
    {
        let j = Journal::open(&d).unwrap();
        j.set_cursor(300).await.unwrap();
        j.record(&entry(1, 0, 100, None)).await.unwrap();
        j.record(&entry(2, 100, 200, None)).await.unwrap();
        j.record(&entry(3, 200, 300, None)).await.unwrap();
    }
    let (offsets, len) = record_offsets(&d);
    // Flip one byte inside the payload of attempt 2's record.
    let at = offsets[2];
    let mut bytes = fs::read(d.join(FILE)).unwrap();
    bytes[at + 8 + 5] ^= 0x20;
    fs::write(d.join(FILE), &bytes).unwrap();

    let l = read(&d).unwrap();
    assert_eq!((l.cursor, attempts(&l)), (300, vec![1]));
    let dmg = l.damage.unwrap();
    assert_eq!(dmg.kind, DamageKind::Checksum);
    assert_eq!((dmg.offset, dmg.ignored), (at as u64, (len - at) as u64));
    let msg = dmg.to_string();
    assert!(
        msg.contains("corrupt") && msg.contains(&at.to_string()),
        "{msg}"
    );

    // The same with a corrupt length field.
    bytes[at + 8 + 5] ^= 0x20;
    bytes[at + 3] = 0xff;
    fs::write(d.join(FILE), &bytes).unwrap();
    let l = read(&d).unwrap();
    assert_eq!(attempts(&l), vec![1]);
    assert!(matches!(l.damage.unwrap().kind, DamageKind::Unreadable(_)));
}

#[test]
fn a_file_without_the_magic_is_refused() {
    let d = dir("magic");
    fs::create_dir_all(&d).unwrap();
    fs::write(d.join(FILE), "{not a journal").unwrap();
    assert!(matches!(read(&d), Err(JournalError::Corrupt { .. })));
    assert!(matches!(
        Journal::open(&d),
        Err(JournalError::Corrupt { .. })
    ));
}

#[test]
fn a_journal_of_the_old_layout_is_refused() {
    for name in ["cursor", "txn-4.json", ".txn-9.json.tmp"] {
        let d = dir("old");
        fs::create_dir_all(&d).unwrap();
        fs::write(d.join(name), "1").unwrap();
        let e = Journal::open(&d).unwrap_err();
        assert!(matches!(e, JournalError::OldLayout { .. }), "{name}: {e}");
        assert!(e.to_string().contains("earlier version"), "{e}");
        assert!(matches!(read(&d), Err(JournalError::OldLayout { .. })));
    }
}

/// A journal of 40 attempts with the cursor at 400 where only 7, 21 and 40 are left open.
async fn mostly_dead(j: &Journal) {
    for a in 1..=40 {
        j.submit(vec![
            Record::Opened(entry(a, (a - 1) * 10, a * 10, None)),
            Record::Cursor { next: a * 10 },
        ])
        .synced()
        .await
        .unwrap();
    }
    for a in 1..=40 {
        if ![7, 21, 40].contains(&a) {
            j.clear(a).await.unwrap();
        }
    }
    j.clear(41).await.unwrap();
}

#[tokio::test]
async fn compaction_keeps_exactly_the_live_records() {
    let d = dir("compact");
    let j = Journal::open_with(
        &d,
        Options {
            compact_min_bytes: 2048,
        },
    )
    .unwrap();
    mostly_dead(&j).await;
    assert!(j.counters().compactions >= 1, "{:?}", j.counters());
    // Compacted on the way (records may have followed the last compaction): the same live set.
    let l = j.load().unwrap();
    assert_eq!(
        (l.cursor, attempts(&l), l.last_attempt),
        (400, vec![7, 21, 40], 41)
    );
    // Compact once more by hand: the file then holds the cursor, the live attempts and the
    // final record of the highest attempt, nothing else.
    drop(j);
    let (state, _) = read_state(&d.join(FILE)).unwrap();
    writer::write_compacted(&d, &state).unwrap();
    writer::install_compacted(&d).unwrap();
    assert_eq!(
        raw_records(&d),
        vec![
            Record::Cursor { next: 400 },
            Record::Opened(entry(7, 60, 70, None)),
            Record::Opened(entry(21, 200, 210, None)),
            Record::Opened(entry(40, 390, 400, None)),
            Record::Final { attempt: 41 },
        ]
    );
    let j = Journal::open(&d).unwrap();
    let l2 = j.load().unwrap();
    assert_eq!(l2, l);
    assert_eq!(j.last_attempt().unwrap(), 41);
}

#[tokio::test]
async fn a_crash_during_compaction_leaves_the_same_live_records() {
    let d = dir("compact-crash");
    {
        // Never compacts by itself.
        let j = Journal::open_with(
            &d,
            Options {
                compact_min_bytes: u64::MAX,
            },
        )
        .unwrap();
        mostly_dead(&j).await;
        assert_eq!(j.counters().compactions, 0);
    }
    let before = read(&d).unwrap();
    assert_eq!(attempts(&before), vec![7, 21, 40]);
    let old_len = fs::metadata(d.join(FILE)).unwrap().len();
    let (state, _) = read_state(&d.join(FILE)).unwrap();
    assert!(state.should_compact(1024));

    // Crash after step 1: the temporary file is left, the journal untouched.
    writer::write_compacted(&d, &state).unwrap();
    assert!(d.join(TMP).exists());
    assert_eq!(read(&d).unwrap(), before);
    // Opening removes the temporary file and reads the same.
    {
        let j = Journal::open(&d).unwrap();
        assert!(!d.join(TMP).exists());
        assert_eq!(j.load().unwrap(), before);
    }
    // Crash after the rename, before the directory sync: the new, shorter file reads the same
    // (had the rename not reached the disk, the old one would be there, as above).
    let (state, _) = read_state(&d.join(FILE)).unwrap();
    writer::write_compacted(&d, &state).unwrap();
    fs::rename(d.join(TMP), d.join(FILE)).unwrap();
    assert!(fs::metadata(d.join(FILE)).unwrap().len() < old_len / 2);
    let j = Journal::open(&d).unwrap();
    assert_eq!(j.load().unwrap(), before);
    // And the journal goes on from there.
    j.clear(21).await.unwrap();
    assert_eq!(attempts(&j.load().unwrap()), vec![7, 40]);
}

#[tokio::test]
async fn the_writer_ends_when_the_journal_is_dropped_after_writing_what_was_queued() {
    let d = dir("drop");
    let j = Journal::open(&d).unwrap();
    let t = j.submit(vec![Record::Opened(entry(1, 0, 10, None))]);
    drop(j);
    t.synced().await.unwrap();
    assert_eq!(attempts(&read(&d).unwrap()), vec![1]);
}
