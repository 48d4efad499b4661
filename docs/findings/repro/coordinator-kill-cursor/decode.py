#!/usr/bin/env python3
"""Decode what capture.sh read from the bookie (see README.md).

  decode.py views RUN_DIR/txnlog.jsonl   the last view's cursor ledger, its last entry, and
                                         every ledger of the log seen so far with the last
                                         entry seen in it, `ledger:entry` (for capture.sh)
  decode.py report CAPTURE_DIR           the persisted cursor positions in order, and the
                                         transactions the next coordinator replays as open
                                         although the log holds their COMMITTED entry

The formats are Pulsar's: a cursor ledger entry is a PositionInfo (managed-ledger's
MLDataFormats.proto: ledgerId 1, entryId 2, individualDeletedMessages 3 as MessageRange,
individualDeletedMessageRanges 6 as LongListMap of acknowledged-entry bitsets); a
transaction-log entry is a TransactionMetadataEntry (PulsarTransactionMetadata.proto:
metadata_op 1 NEW/ADD_PARTITION/ADD_SUBSCRIPTION/UPDATE, txnid_least_bits 2,
txnid_most_bits 3, expected_status 4, new_status 5, partitions 6).
"""
import glob
import json
import os
import re
import sys

OPS = {0: "NEW", 1: "ADD_PARTITION", 2: "ADD_SUBSCRIPTION", 3: "UPDATE"}
STATUS = {0: "OPEN", 1: "COMMITTING", 2: "COMMITTED", 3: "ABORTING", 4: "ABORTED"}


def bookie_entries(path):
    """(entry id, payload) of a `readledger -msg -b` dump: each entry is a table of the bytes the
    bookie stores (ledger id, entry id, last add confirmed, length: 8 bytes each; a 4-byte
    digest), then the payload."""
    out, cur = [], None
    for line in open(path):
        m = re.match(r"^\|([0-9a-f]{8})\| ((?:[0-9a-f]{2} )+)", line)
        if not m:
            continue
        if m.group(1) == "00000000":
            cur = bytearray()
            out.append(cur)
        cur.extend(bytes.fromhex(m.group(2).replace(" ", "")))
    return [(int.from_bytes(b[8:16], "big", signed=True), bytes(b[36:])) for b in out]


def varint(b, i):
    r = s = 0
    while True:
        x = b[i]
        i += 1
        r |= (x & 0x7F) << s
        s += 7
        if x < 0x80:
            return r, i


def fields(b):
    i = 0
    while i < len(b):
        k, i = varint(b, i)
        f, t = k >> 3, k & 7
        if t == 0:
            v, i = varint(b, i)
        elif t == 2:
            n, i = varint(b, i)
            v, i = b[i : i + n], i + n
        elif t == 1:
            v, i = int.from_bytes(b[i : i + 8], "little"), i + 8
        elif t == 5:
            v, i = int.from_bytes(b[i : i + 4], "little"), i + 4
        else:
            raise ValueError(f"wire type {t}")
        yield f, v


def signed(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def position_info(b):
    """(mark-delete (ledger, entry), {ledger: set of acknowledged entry ids above it})."""
    led = ent = None
    acked = {}
    for f, v in fields(b):
        if f == 1:
            led = signed(v)
        elif f == 2:
            ent = signed(v)
        elif f == 3:  # MessageRange{lowerEndpoint 1, upperEndpoint 2}: (lower..upper]
            ends = [dict(fields(p)) for _, p in fields(v)]
            lo, hi = ends[0], ends[1]
            if lo.get(1) == hi.get(1):
                acked.setdefault(lo[1], set()).update(
                    range(signed(lo.get(2, 0)) + 1, signed(hi.get(2, 0)) + 1)
                )
        elif f == 6:  # LongListMap{key 1, values 2}: a bitset of acknowledged entry ids
            key, words = None, []
            for g, w in fields(v):
                if g == 1:
                    key = w
                elif g == 2:
                    words.append(w)
            acked.setdefault(key, set()).update(
                i * 64 + j for i, w in enumerate(words) for j in range(64) if w >> j & 1
            )
    return (led, ent), acked


def metadata_entry(b):
    d = {"partitions": []}
    for f, v in fields(b):
        if f == 6:
            d["partitions"].append(bytes(v).decode())
        else:
            d[f] = v
    return d


def ranges(ids):
    out = []
    for x in sorted(ids):
        if out and out[-1][1] == x - 1:
            out[-1][1] = x
        else:
            out.append([x, x])
    return ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in out)


def views(path):
    last, ledgers = None, {}
    for line in open(path):
        v = json.loads(line)
        if "log" not in v:
            continue
        last = v
        lce = v["log"].get("last_confirmed") or ""
        if ":" in lce:
            ledger, entry = lce.split(":")
            ledgers[ledger] = max(ledgers.get(ledger, -1), int(entry))
    c = last["log"]["cursors"]["transaction.subscription"]
    print(c["cursorLedger"], c["cursorLedgerLastEntry"], ",".join(f"{l}:{e}" for l, e in ledgers.items()))


def report(d):
    log = {}  # (ledger, entry) -> decoded metadata entry
    for path in sorted(glob.glob(os.path.join(d, "log-*.txt"))):
        ledger = int(re.search(r"log-(\d+)\.txt$", path).group(1))
        for e, p in bookie_entries(path):
            log[(ledger, e)] = metadata_entry(p)
    by_txn = {}
    for pos in sorted(log):
        m = log[pos]
        by_txn.setdefault((m.get(3, 0), m.get(2, 0)), []).append(pos)
    print(f"transaction log: {len(log)} entries read, {len(by_txn)} transactions")
    last = None
    for path in sorted(glob.glob(os.path.join(d, "cursor-*.txt"))):
        kill, cl = re.search(r"cursor-(\d+)-(\d+)\.txt$", path).groups()
        print(f"kill {kill}: the dead coordinator's cursor ledger {cl}, every entry persisted:")
        for e, p in bookie_entries(path):
            (led, ent), acked = position_info(p)
            above = "; ".join(f"ledger {k}: {ranges(v)}" for k, v in sorted(acked.items()))
            print(f"  entry {cl}:{e}: markDeletePosition {led}:{ent}; acknowledged above it: {above or 'none'}")
            last = ((led, ent), acked)
    if last is None:
        print("no cursor ledger was read")
        return
    (md, acked) = last

    def is_acked(pos):
        return pos <= md or pos[1] in acked.get(pos[0], ())

    print(
        "what the next coordinator recovers (the last entry above): markDeletePosition "
        f"{md[0]}:{md[1]}"
    )
    reopened = []
    for txn, positions in sorted(by_txn.items()):
        ents = [(p, log[p]) for p in positions]
        committed = any(m.get(1) == 3 and m.get(5) == 2 for _, m in ents)
        un = [(p, m) for p, m in ents if not is_acked(p)]
        if not committed or not un:
            continue
        ops = [OPS.get(m.get(1, 0)) for _, m in un]
        if ops[0] == "NEW" and "ADD_PARTITION" in ops and "UPDATE" not in ops:
            reopened.append((txn, un))
    print(
        f"transactions committed in the log whose NEW and ADD_PARTITION entries are unacknowledged "
        f"and whose status updates are acknowledged (replayed as OPEN, then aborted on timeout): "
        f"{len(reopened)}"
    )
    for (most, least), un in reopened:
        at = ", ".join(f"{p[0]}:{p[1]} {OPS.get(m.get(1, 0))}" for p, m in un)
        print(f"  ({most},{least}): {at}")
    vpath = os.path.join(d, "verdict.json")
    if os.path.exists(vpath):
        v = json.load(open(vpath))
        lost = sorted(
            {t for m in v.get("missing", []) for t in re.findall(r"\((\d+,\d+)\)", m.get("explanation", ""))}
        )
        print(f"the run's verdict: {v['status']}; transactions named by its missing ranges: {' '.join('(' + t + ')' for t in lost) or 'none'}")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "views":
        views(sys.argv[2])
    elif len(sys.argv) == 3 and sys.argv[1] == "report":
        report(sys.argv[2])
    else:
        sys.exit(__doc__)
