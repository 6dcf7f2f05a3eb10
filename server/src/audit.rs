//! The audit log: every conversation step a player took and every message the server refused,
//! recorded in the store (player, conversation, message, code, detail) so a support agent can
//! replay what a player did (`GET /admin/audit`).
//!
//! Sessions never wait for it: a record goes into a bounded queue ([`AuditLog::record`]) and one
//! writer task ([`run_writer`]) stores records in batches, one transaction each. If the queue is
//! full (the store is down or slower than the traffic), the record is dropped and counted
//! (`banter_audit_dropped_total`): the audit is for support, and must never slow a player or
//! hold memory without bound. Rows older than the retention are pruned every hour.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::store::{AuditRecord, Store};

/// Longest `detail` kept, in bytes (cut at a character boundary).
pub const MAX_DETAIL_BYTES: usize = 256;
/// Most records one transaction writes.
const BATCH: usize = 4096;
/// How long the writer keeps collecting after the first record of a batch arrives. Each commit
/// rewrites the table's and indexes' hot pages (and SQLite fsyncs its WAL), so a few large
/// commits cost far less per record than a commit for whatever a wake-up happened to find;
/// support reads rows a fraction of a second late.
const LINGER: Duration = Duration::from_millis(100);
/// How often old rows are pruned.
const PRUNE_EVERY: Duration = Duration::from_secs(3600);

/// The last stamp handed out (see [`stamp`]).
static LAST_STAMP: AtomicI64 = AtomicI64::new(0);

/// When the server records something, in microseconds since the Unix epoch, strictly increasing
/// within this process (a later call never gets an earlier or equal stamp, even when the wall
/// clock steps back or two calls share a microsecond): the order support reads a player's rows
/// in ([`AuditRecord::recorded_us`]).
pub fn stamp() -> i64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX));
    let mut last = LAST_STAMP.load(Ordering::Relaxed);
    loop {
        let next = now.max(last.saturating_add(1));
        match LAST_STAMP.compare_exchange_weak(last, next, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return next,
            Err(seen) => last = seen,
        }
    }
}

/// Audit settings.
#[derive(Clone, Debug)]
pub struct AuditConfig {
    /// Record at all.
    pub enabled: bool,
    /// How long rows are kept.
    pub retention: Duration,
    /// Records waiting for the writer, at most.
    pub queue: usize,
}

impl Default for AuditConfig {
    fn default() -> Self {
        AuditConfig {
            enabled: true,
            retention: Duration::from_secs(30 * 24 * 3600),
            queue: 65_536,
        }
    }
}

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
        let Some(queue) = &self.queue else { return };
        let record = AuditRecord {
            player_id: player.to_owned(),
            conversation: conversation.map(str::to_owned),
            message: message.to_owned(),
            code: code.map(str::to_owned),
            detail: detail.map(|d| truncate(d, MAX_DETAIL_BYTES).to_owned()),
            recorded_us: stamp(),
        };
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

/// Stores queued records in batches until `stop` is cancelled, then writes what is left and
/// returns. A batch the store refuses is retried a few times (an outage), then dropped and
/// counted: the queue behind it must keep moving.
pub async fn run_writer(
    app: crate::app::SharedApp,
    mut queue: mpsc::Receiver<AuditRecord>,
    stop: CancellationToken,
) {
    let store = app.store.clone();
    let log = &app.audit;
    let retention = app.config.audit.retention;
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
/// closed meanwhile (every sender gone).
async fn collect(queue: &mut mpsc::Receiver<AuditRecord>, batch: &mut Vec<AuditRecord>) -> bool {
    let deadline = tokio::time::Instant::now() + LINGER;
    while batch.len() < BATCH {
        let room = BATCH - batch.len();
        match tokio::time::timeout_at(deadline, queue.recv_many(batch, room)).await {
            Ok(0) => return false,
            Ok(_) => {}
            Err(_) => break,
        }
    }
    true
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
    use super::*;

    #[test]
    fn details_are_cut_at_a_character_boundary() {
        assert_eq!(truncate("hello", 10), "hello");
        assert_eq!(truncate("hello", 3), "hel");
        assert_eq!(truncate("héllo", 2), "h");
        assert_eq!(truncate("", 0), "");
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
