//! The audit log: every conversation step a player took and every message the server refused,
//! recorded in the store (player, conversation, message, code, detail) so a support agent can
//! replay what a player did (`GET /admin/audit`).
//!
//! Sessions never wait for it: a record goes into a bounded queue ([`AuditLog::record`]) and one
//! writer task ([`run_writer`]) stores records in batches, one transaction each. If the queue is
//! full (the store is down or slower than the traffic), the record is dropped and counted
//! (`banter_audit_dropped_total`): the audit is for support, and must never slow a player or
//! hold memory without bound. Rows older than the retention are pruned every hour.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::clock::{stamp, stamp_at};
use crate::config::AuditConfig;
use crate::store::{AuditEntry, AuditRecord, Store};

/// Longest `detail` kept, in bytes (cut at a character boundary).
pub const MAX_DETAIL_BYTES: usize = 256;
/// Most steps one trail record carries.
pub const TRAIL_STEPS: usize = 32;
/// About what a trail line takes: the stamp, the message, a node or response name.
const TYPICAL_LINE_BYTES: usize = 48;
/// The `message` of a trail record: several accepted steps of one conversation in one row (see
/// [`Trail`]). No client message has this name.
pub const TRAIL: &str = "trail";
/// Most records one transaction writes.
const BATCH: usize = 4096;
/// How long the writer keeps collecting after the first record of a batch arrives. Each commit
/// rewrites the table's and indexes' hot pages (and SQLite fsyncs its WAL), so a few large
/// commits cost far less per record than a commit for whatever a wake-up happened to find;
/// support reads rows a fraction of a second late.
const LINGER: Duration = Duration::from_millis(100);
/// How often old rows are pruned.
const PRUNE_EVERY: Duration = Duration::from_secs(3600);

/// The sessions' side of the audit log.
#[derive(Debug)]
pub struct AuditLog {
    queue: Option<mpsc::Sender<AuditRecord>>,
    recorded: AtomicU64,
    written: AtomicU64,
    dropped: AtomicU64,
}

impl AuditLog {
    /// An audit log and the receiving end its writer drains; no receiver when auditing is off.
    pub fn new(config: &AuditConfig) -> (AuditLog, Option<mpsc::Receiver<AuditRecord>>) {
        let (queue, rx) = if config.enabled {
            let (tx, rx) = mpsc::channel(config.queue.max(1));
            (Some(tx), Some(rx))
        } else {
            (None, None)
        };
        let log = AuditLog {
            queue,
            recorded: AtomicU64::new(0),
            written: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
        };
        (log, rx)
    }

    /// Queues a record without waiting; a full queue drops it (and counts the drop).
    pub fn record(
        &self,
        player: &str,
        conversation: Option<&str>,
        message: &str,
        code: Option<&str>,
        detail: Option<&str>,
    ) {
        if self.queue.is_none() {
            return;
        }
        self.queue(AuditRecord {
            player_id: player.to_owned(),
            conversation: conversation.map(str::to_owned),
            message: message.to_owned(),
            code: code.map(str::to_owned),
            detail: detail.map(|d| truncate(d, MAX_DETAIL_BYTES).to_owned()),
            recorded_us: stamp(),
        });
    }

    /// True when records are kept at all.
    pub fn enabled(&self) -> bool {
        self.queue.is_some()
    }

    /// Queues a record without waiting; a full queue drops it (and counts the drop).
    fn queue(&self, record: AuditRecord) {
        let Some(queue) = &self.queue else { return };
        match queue.try_send(record) {
            Ok(()) => self.recorded.fetch_add(1, Ordering::Relaxed),
            Err(_) => self.dropped.fetch_add(1, Ordering::Relaxed),
        };
    }

    /// Records queued so far.
    pub fn recorded(&self) -> u64 {
        self.recorded.load(Ordering::Relaxed)
    }

    /// Records dropped because the queue was full or the store refused them.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Records queued but neither written nor counted as dropped: at shutdown, what the grace
    /// left unwritten.
    pub fn unwritten(&self) -> u64 {
        let done = self.written.load(Ordering::Relaxed) + self.dropped();
        self.recorded().saturating_sub(done)
    }

    fn lost(&self, n: usize) {
        self.dropped.fetch_add(n as u64, Ordering::Relaxed);
    }
}

/// A session's accepted conversation steps that changed nothing stored, and its refused
/// messages, kept until there are [`TRAIL_STEPS`] of them, the conversation changes or the
/// session ends, then queued as one record (message [`TRAIL`], one line per step: its time,
/// message, the refusal's code (empty for a step) and detail, tab separated). A line's time is
/// written `+N`: N microseconds after the line before it (the first line's, after the record's
/// `recorded_us`), a few digits where the whole stamp takes sixteen; [`expand`] also reads the
/// whole stamps that rows written before this carry. A row per step
/// cost the server half its CPU on the validated step (BENCHMARKS.md, the audited step); a row
/// per 32 costs a thirty-second of the writing. Refusals joined the trail when a flood of
/// malformed frames, a row each, turned out to be what made honest players' quest writes wait
/// at SQLite's one writer (RELIABILITY.md, scenario 6, seventh round). Support still reads a
/// row per step: [`expand`] unfolds trails when they are read. Best-effort like every queued
/// record: a crash loses the steps not yet queued, never a change of state (those are written
/// with their change).
#[derive(Debug, Default)]
pub struct Trail {
    conversation: Option<String>,
    lines: String,
    steps: usize,
    first_us: i64,
    last_us: i64,
}

impl Trail {
    /// Adds a step of `conversation` taken at `at_us` (the wall clock's microseconds the
    /// message came in with); queues the trail first if it belongs to another conversation, and
    /// after if it is full. The detail comes in pieces, written one after the other (cut at
    /// [`MAX_DETAIL_BYTES`], tabs and line breaks made spaces): nothing is formatted or
    /// allocated for a step, and no clock is read.
    #[allow(clippy::too_many_arguments)]
    pub fn push(
        &mut self,
        log: &AuditLog,
        player: &str,
        conversation: Option<&str>,
        at_us: i64,
        message: &str,
        code: Option<&str>,
        detail: &[&str],
    ) {
        if !log.enabled() {
            return;
        }
        if self.steps > 0 && self.conversation.as_deref() != conversation {
            self.flush(log, player);
        }
        let at = stamp_at(at_us);
        if self.steps == 0 {
            self.conversation = conversation.map(str::to_owned);
            self.first_us = at;
            self.last_us = at;
            // The room a full trail of short steps takes, once, not grown step by step.
            self.lines.reserve(TRAIL_STEPS * TYPICAL_LINE_BYTES);
        }
        let lines = &mut self.lines;
        // Stamps only grow (`stamp_at`), so the difference is never negative.
        lines.push('+');
        lines.push_str(itoa::Buffer::new().format(at - self.last_us));
        self.last_us = at;
        for field in [message, code.unwrap_or("")] {
            lines.push('\t');
            lines.push_str(field);
        }
        lines.push('\t');
        let mut room = MAX_DETAIL_BYTES;
        for piece in detail {
            let piece = truncate(piece, room);
            room -= piece.len();
            push_on_one_line(lines, piece);
        }
        lines.push('\n');
        self.steps += 1;
        if self.steps >= TRAIL_STEPS {
            self.flush(log, player);
        }
    }

    /// Queues what the trail holds, if anything.
    pub fn flush(&mut self, log: &AuditLog, player: &str) {
        if self.steps == 0 {
            return;
        }
        let lines = std::mem::take(&mut self.lines);
        log.queue(AuditRecord {
            player_id: player.to_owned(),
            conversation: self.conversation.take(),
            message: TRAIL.to_owned(),
            code: None,
            detail: Some(lines),
            recorded_us: self.first_us,
        });
        self.steps = 0;
    }
}

/// Unfolds trail records into one entry per step (each with its own `recorded_us`, the row's id
/// and time), and orders everything as it was recorded. Other rows pass unchanged.
pub fn expand(rows: Vec<AuditEntry>) -> Vec<AuditEntry> {
    let mut entries = Vec::with_capacity(rows.len());
    for row in rows {
        let lines = match (&row.record.detail, row.record.message.as_str()) {
            (Some(lines), TRAIL) => lines.clone(),
            _ => {
                entries.push(row);
                continue;
            }
        };
        // A line's time: `+N` after the line before (the first: after the row's), or, in rows
        // written before that, the whole stamp.
        let mut last_us = row.record.recorded_us;
        for line in lines.lines() {
            // `at`, message, code (empty for a step) and detail; rows written before refusals
            // joined the trail have no code field (a detail never holds a tab).
            let fields: Vec<&str> = line.splitn(4, '\t').collect();
            let (at, message, code, detail) = match fields[..] {
                [at, message, code, detail] => (at, message, Some(code), Some(detail)),
                [at, message, detail] => (at, message, None, Some(detail)),
                [at, message] => (at, message, None, None),
                _ => continue,
            };
            last_us = match at.strip_prefix('+') {
                Some(after) => after
                    .parse::<i64>()
                    .ok()
                    .and_then(|n| last_us.checked_add(n))
                    .unwrap_or(last_us),
                None => at.parse().unwrap_or(row.record.recorded_us),
            };
            entries.push(AuditEntry {
                id: row.id,
                at_ms: row.at_ms,
                step_key: None,
                record: AuditRecord {
                    player_id: row.record.player_id.clone(),
                    conversation: row.record.conversation.clone(),
                    message: message.to_owned(),
                    code: code.filter(|c| !c.is_empty()).map(str::to_owned),
                    detail: detail.map(str::to_owned),
                    recorded_us: last_us,
                },
            });
        }
    }
    entries.sort_by_key(|e| (e.record.recorded_us, e.id));
    entries
}

/// Appends `text` with its tabs and line breaks made spaces: a trail line's detail.
fn push_on_one_line(lines: &mut String, text: &str) {
    // Bytes, not characters: a tab or a line break is one byte that is never part of another
    // character's encoding.
    if !text.bytes().any(|b| matches!(b, b'\t' | b'\n')) {
        lines.push_str(text);
        return;
    }
    lines.extend(
        text.chars()
            .map(|c| if matches!(c, '\t' | '\n') { ' ' } else { c }),
    );
}

/// The longest prefix of `text` of at most `max` bytes that ends on a character boundary.
pub fn truncate(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Stores queued records in `store` in batches until `stop` is cancelled, then writes what is
/// left and returns; counts what it wrote and dropped in `log`, and prunes rows older than
/// `retention`. A batch the store refuses is retried a few times (an outage), then dropped and
/// counted: the queue behind it must keep moving.
pub async fn run_writer(
    store: Arc<dyn Store>,
    log: Arc<AuditLog>,
    retention: Duration,
    mut queue: mpsc::Receiver<AuditRecord>,
    stop: CancellationToken,
) {
    let log = log.as_ref();
    let mut prune = tokio::time::interval(PRUNE_EVERY);
    let mut batch = Vec::with_capacity(BATCH);
    loop {
        tokio::select! {
            received = queue.recv_many(&mut batch, BATCH) => {
                if received == 0 {
                    return;
                }
                let open = collect(&mut queue, &mut batch).await;
                write(store.as_ref(), log, &mut batch).await;
                if !open {
                    return;
                }
            }
            _ = prune.tick() => {
                match store.prune_audit(retention).await {
                    Ok(0) => {}
                    Ok(n) => tracing::info!(rows = n, "pruned old audit rows"),
                    Err(e) => tracing::warn!(error = %e, "cannot prune the audit log"),
                }
            }
            _ = stop.cancelled() => {
                while let Ok(record) = queue.try_recv() {
                    batch.push(record);
                    if batch.len() == BATCH {
                        write(store.as_ref(), log, &mut batch).await;
                    }
                }
                write(store.as_ref(), log, &mut batch).await;
                return;
            }
        }
    }
}

/// Adds to `batch` what arrives within [`LINGER`], up to [`BATCH`] records; `false` if the queue
/// closed meanwhile (every sender gone). It takes what is queued, and if that is short of a
/// batch sleeps through the rest of the linger and takes what queued up meanwhile, rather than
/// waiting on the queue: a wait is a wake-up of this task for every record a session queues
/// (thousands a second under load, each a hand-off between the runtime's threads), where a
/// sleep is one. The queue holds `queue` records (65,536 by default), far more than a linger
/// brings.
async fn collect(queue: &mut mpsc::Receiver<AuditRecord>, batch: &mut Vec<AuditRecord>) -> bool {
    let deadline = tokio::time::Instant::now() + LINGER;
    loop {
        while batch.len() < BATCH {
            match queue.try_recv() {
                Ok(record) => batch.push(record),
                Err(mpsc::error::TryRecvError::Empty) => break,
                Err(mpsc::error::TryRecvError::Disconnected) => return false,
            }
        }
        if batch.len() >= BATCH || tokio::time::Instant::now() >= deadline {
            return true;
        }
        tokio::time::sleep_until(deadline).await;
    }
}

async fn write(store: &dyn Store, log: &AuditLog, batch: &mut Vec<AuditRecord>) {
    if batch.is_empty() {
        return;
    }
    for attempt in 0..3u32 {
        match store.record_audit(batch).await {
            Ok(()) => {
                log.written.fetch_add(batch.len() as u64, Ordering::Relaxed);
                batch.clear();
                return;
            }
            Err(e) if e.retryable() && attempt < 2 => {
                tokio::time::sleep(Duration::from_millis(200 << attempt)).await;
            }
            Err(e) => {
                tracing::warn!(error = %e, records = batch.len(), "audit records dropped");
                break;
            }
        }
    }
    log.lost(batch.len());
    batch.clear();
}

#[cfg(test)]
mod tests {
    use futures_util::FutureExt;

    use super::*;

    fn record(n: usize) -> AuditRecord {
        AuditRecord {
            player_id: format!("p{n}"),
            conversation: None,
            message: TRAIL.into(),
            code: None,
            detail: None,
            recorded_us: 0,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_writer_takes_what_a_linger_brings_and_a_full_batch_at_once() {
        let (tx, mut rx) = mpsc::channel(2 * BATCH);
        let mut batch = Vec::new();
        tx.try_send(record(0)).expect("room");
        let started = tokio::time::Instant::now();
        {
            let collecting = collect(&mut rx, &mut batch);
            tokio::pin!(collecting);
            // Records queued while the writer lingers join the batch after the linger.
            assert!(collecting.as_mut().now_or_never().is_none());
            tx.try_send(record(1)).expect("room");
            assert!(collecting.await, "the queue is open");
        }
        assert_eq!(batch.len(), 2);
        assert_eq!(started.elapsed(), LINGER);

        // A batch already full goes at once, and what is past it waits for the next.
        batch.clear();
        (0..BATCH + 1).for_each(|n| tx.try_send(record(n)).expect("room"));
        let started = tokio::time::Instant::now();
        assert!(collect(&mut rx, &mut batch).await);
        assert_eq!(batch.len(), BATCH);
        assert_eq!(started.elapsed(), Duration::ZERO);

        // Every sender gone: the writer hears it.
        batch.clear();
        drop(tx);
        assert!(!collect(&mut rx, &mut batch).await, "closed");
        assert_eq!(batch.len(), 1, "what was queued is still taken");
    }

    #[test]
    fn details_are_cut_at_a_character_boundary() {
        assert_eq!(truncate("hello", 10), "hello");
        assert_eq!(truncate("hello", 3), "hel");
        assert_eq!(truncate("héllo", 2), "h");
        assert_eq!(truncate("", 0), "");
    }

    fn rows(records: Vec<AuditRecord>) -> Vec<AuditEntry> {
        records
            .into_iter()
            .enumerate()
            .map(|(i, record)| AuditEntry {
                id: i as i64 + 1,
                at_ms: 0,
                step_key: None,
                record,
            })
            .collect()
    }

    #[test]
    fn a_trail_queues_one_record_per_conversation_and_unfolds_into_its_steps() {
        let (log, rx) = AuditLog::new(&AuditConfig::default());
        let mut rx = rx.expect("on");
        let mut trail = Trail::default();
        trail.push(&log, "p", Some("Pim"), 1, "talk", None, &["Pim"]);
        trail.push(&log, "p", Some("Pim"), 1, "choose", None, &["Pim_r1"]);
        trail.push(
            &log,
            "p",
            Some("Pim"),
            1,
            "advance",
            None,
            &["tab\there\n", "and a line"],
        );
        trail.push(
            &log,
            "p",
            Some("Pim"),
            1,
            "advance",
            Some("awaits_choice"),
            &["choose first"],
        );
        assert_eq!(log.recorded(), 0, "nothing queued while the trail grows");
        // Another conversation: the first trail goes out as one record.
        trail.push(&log, "p", Some("Ines"), 1, "talk", None, &["Keeper Ines"]);
        log.record(
            "p",
            Some("Ines"),
            "choose",
            Some("condition_failed"),
            Some("no"),
        );
        trail.flush(&log, "p");
        trail.flush(&log, "p");
        let mut queued = Vec::new();
        while let Ok(record) = rx.try_recv() {
            queued.push(record);
        }
        assert_eq!(queued.len(), 3, "{queued:#?}");
        assert_eq!(queued[0].message, TRAIL);
        assert_eq!(queued[0].conversation.as_deref(), Some("Pim"));
        let steps = expand(rows(queued));
        // Message, conversation, code, detail.
        type Seen<'a> = (&'a str, Option<&'a str>, Option<&'a str>, Option<&'a str>);
        let seen: Vec<Seen> = steps
            .iter()
            .map(|e| {
                (
                    e.record.message.as_str(),
                    e.record.conversation.as_deref(),
                    e.record.code.as_deref(),
                    e.record.detail.as_deref(),
                )
            })
            .collect();
        assert_eq!(
            seen,
            [
                ("talk", Some("Pim"), None, Some("Pim")),
                ("choose", Some("Pim"), None, Some("Pim_r1")),
                ("advance", Some("Pim"), None, Some("tab here and a line")),
                (
                    "advance",
                    Some("Pim"),
                    Some("awaits_choice"),
                    Some("choose first")
                ),
                ("talk", Some("Ines"), None, Some("Keeper Ines")),
                ("choose", Some("Ines"), Some("condition_failed"), Some("no")),
            ]
        );
        assert!(
            steps
                .windows(2)
                .all(|w| w[0].record.recorded_us < w[1].record.recorded_us),
            "in the order recorded"
        );
    }

    #[test]
    fn a_trail_line_carries_its_time_after_the_line_before() {
        let (log, rx) = AuditLog::new(&AuditConfig::default());
        let mut rx = rx.expect("on");
        let mut trail = Trail::default();
        for message in ["talk", "choose", "advance"] {
            trail.push(&log, "p", Some("Pim"), 1, message, None, &["x"]);
        }
        trail.flush(&log, "p");
        let record = rx.try_recv().expect("one trail");
        let detail = record.detail.clone().unwrap_or_default();
        let lines: Vec<&str> = detail.lines().collect();
        assert!(lines[0].starts_with("+0\ttalk\t\tx"), "{detail}");
        assert!(lines.iter().all(|l| l.starts_with('+')), "{detail}");
        // Stamps are strictly increasing, so every line after the first is at least 1 µs later.
        let stamps: Vec<i64> = expand(rows(vec![record.clone()]))
            .iter()
            .map(|e| e.record.recorded_us)
            .collect();
        assert_eq!(stamps.len(), 3);
        assert_eq!(stamps[0], record.recorded_us);
        assert!(stamps.windows(2).all(|w| w[0] < w[1]), "{stamps:?}");

        let written = AuditRecord {
            player_id: "p".into(),
            conversation: Some("Pim".into()),
            message: TRAIL.into(),
            code: None,
            detail: Some("+0\ttalk\t\tPim\n+250\tchoose\t\tPim_r1\n+1\tclose\t\t\n".into()),
            recorded_us: 1_000,
        };
        let stamps: Vec<i64> = expand(rows(vec![written]))
            .iter()
            .map(|e| e.record.recorded_us)
            .collect();
        assert_eq!(stamps, [1_000, 1_250, 1_251]);
    }

    #[test]
    fn a_trail_written_before_refusals_joined_it_still_unfolds() {
        let old = AuditRecord {
            player_id: "p".into(),
            conversation: Some("Pim".into()),
            message: TRAIL.into(),
            code: None,
            detail: Some("10\ttalk\tPim\n20\tchoose\tPim_r1\n30\tclose\n".into()),
            recorded_us: 10,
        };
        let steps: Vec<(i64, String, Option<String>, Option<String>)> = expand(rows(vec![old]))
            .into_iter()
            .map(|e| {
                (
                    e.record.recorded_us,
                    e.record.message,
                    e.record.code,
                    e.record.detail,
                )
            })
            .collect();
        assert_eq!(
            steps,
            [
                (10, "talk".into(), None, Some("Pim".into())),
                (20, "choose".into(), None, Some("Pim_r1".into())),
                (30, "close".into(), None, None),
            ]
        );
    }

    #[test]
    fn a_full_trail_goes_out_and_an_audit_that_is_off_keeps_none() {
        let (log, rx) = AuditLog::new(&AuditConfig::default());
        let mut rx = rx.expect("on");
        let mut trail = Trail::default();
        for i in 0..TRAIL_STEPS + 1 {
            trail.push(
                &log,
                "p",
                Some("c"),
                1,
                "advance",
                None,
                &[&format!("n{i}")],
            );
        }
        let full = rx.try_recv().expect("a full trail is queued");
        assert_eq!(
            full.detail.as_deref().map(|d| d.lines().count()),
            Some(TRAIL_STEPS)
        );
        assert!(rx.try_recv().is_err(), "the next step waits in a new trail");

        let (off, _) = AuditLog::new(&AuditConfig {
            enabled: false,
            ..AuditConfig::default()
        });
        let mut trail = Trail::default();
        trail.push(&off, "p", Some("c"), 1, "advance", None, &["n"]);
        trail.flush(&off, "p");
        assert_eq!((off.recorded(), off.dropped()), (0, 0));
    }

    #[test]
    fn a_full_queue_drops_and_counts_and_off_records_nothing() {
        let (log, rx) = AuditLog::new(&AuditConfig {
            queue: 1,
            ..AuditConfig::default()
        });
        log.record("p", None, "talk", None, None);
        log.record("p", None, "talk", Some("busy"), Some("x"));
        assert_eq!((log.recorded(), log.dropped()), (1, 1));
        drop(rx);

        let (off, rx) = AuditLog::new(&AuditConfig {
            enabled: false,
            ..AuditConfig::default()
        });
        assert!(rx.is_none());
        off.record("p", None, "talk", None, None);
        assert_eq!((off.recorded(), off.dropped()), (0, 0));
    }
}
