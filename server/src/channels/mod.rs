//! Which game-server channels are open on this instance, and what a request shares with a
//! channel's task (PROTOCOL.md section 16): its numbered events, the signal an answer waits on,
//! the queue its batches go in by, how it ended. The task itself, owning the players' sessions,
//! is `channel/`; like a WebSocket session, a channel is owned by one task, and the application
//! only holds handles to it.

pub mod events;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use banter_protocol::channel::{Item, Placed};
use serde_json::value::RawValue;
use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::sync::CancellationToken;

use crate::credentials::GameServer;
use events::{AckAhead, EventQueue, Overflow};

/// The channels open on this instance.
#[derive(Default)]
pub struct Channels {
    open: Mutex<HashMap<String, Arc<ChannelHandle>>>,
}

impl Channels {
    /// The open channel `id`, if it belongs to the credential `server`.
    pub fn find(&self, id: &str, server: &str) -> Option<Arc<ChannelHandle>> {
        self.lock()
            .get(id)
            .filter(|c| c.server.id == server && !c.is_ended())
            .cloned()
    }

    /// The ids of the credentials with channels open here (the revocation watcher asks after
    /// them).
    pub fn credentials(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.lock().values().map(|c| c.server.id.clone()).collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    /// Ends every channel of a revoked credential.
    pub fn revoked(&self, server: &str) {
        let revoked: Vec<Arc<ChannelHandle>> = self
            .lock()
            .values()
            .filter(|c| c.server.id == server)
            .cloned()
            .collect();
        for channel in revoked {
            channel.end(Ending::Revoked);
        }
    }

    pub fn insert(&self, channel: Arc<ChannelHandle>) {
        self.lock().insert(channel.id.clone(), channel);
    }

    pub fn remove(&self, id: &str) {
        self.lock().remove(id);
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Arc<ChannelHandle>>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// How a channel ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// The game server closed it: its players left.
    Closed,
    /// No batch for the idle timeout, or its WebSocket dropped.
    Dropped,
    /// Its credential was revoked.
    Revoked,
    /// The server is shutting down.
    Shutdown,
    /// Its unacknowledged events passed the bounds.
    TooSlow,
}

impl Ending {
    /// Whether its players' open conversations are parked for a `resume`.
    pub fn parks(self) -> bool {
        self != Ending::Closed
    }
}

/// A batch on its way to the channel's task: positions, then items, in order.
#[derive(Debug)]
pub struct Batch {
    /// The HTTP batch's number; `None` on a WebSocket, which orders and delivers.
    pub seq: Option<u64>,
    /// Events up to it are forgotten.
    pub ack: u64,
    pub positions: Vec<Placed>,
    pub items: Vec<Item<Box<RawValue>>>,
    /// Parties declared for the channel's players, applied after the items.
    pub parties: Vec<banter_protocol::DeclaredParty>,
}

/// Why a batch was refused before anything in it was applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BatchRefused {
    #[error(transparent)]
    Sequence(#[from] SeqError),
    #[error(transparent)]
    AckAhead(#[from] AckAhead),
}

/// What a request asks of a channel's task.
pub type BatchRequest = (Batch, oneshot::Sender<Result<Arrival, BatchRefused>>);

/// A batch's place among its channel's arrivals: an answer waiting for events returns when a
/// newer one arrives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arrival(u64);

/// What the sequence number of an HTTP batch means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sequenced {
    /// The next batch: apply it.
    Next,
    /// The last batch again: answer, apply nothing.
    Retry,
}

/// A batch the sequence rule refuses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SeqError {
    #[error("batch {seq} is older than the last applied, {applied}")]
    Stale { seq: u64, applied: u64 },
    #[error("batch {seq} skips ahead: the next is {next}")]
    Gap { seq: u64, next: u64 },
}

/// The sequence rule (PROTOCOL.md section 16.3).
pub fn sequence(seq: u64, applied: u64) -> Result<Sequenced, SeqError> {
    match seq {
        s if s == applied + 1 => Ok(Sequenced::Next),
        s if s == applied && s > 0 => Ok(Sequenced::Retry),
        s if s <= applied => Err(SeqError::Stale { seq, applied }),
        _ => Err(SeqError::Gap {
            seq,
            next: applied + 1,
        }),
    }
}

/// What requests share with a channel's task.
pub struct ChannelHandle {
    pub id: String,
    pub server: GameServer,
    events: Mutex<EventQueue>,
    /// Bumped whenever an event is queued, a batch arrives or the channel ends: what a waiting
    /// answer waits on.
    changed: watch::Sender<u64>,
    /// How many batches arrived.
    batches: AtomicU64,
    ended: CancellationToken,
    ending: Mutex<Option<Ending>>,
    /// When the last batch arrived (server time); `None` for a WebSocket channel, which its
    /// socket keeps alive.
    last_batch: Mutex<Option<Duration>>,
    batches_in: mpsc::Sender<BatchRequest>,
}

impl ChannelHandle {
    /// A handle and the receiving end of its batch queue, for the channel's task. `idle_since`:
    /// the time an HTTP channel's idle clock starts; `None` for a WebSocket's.
    pub fn new(
        id: String,
        server: GameServer,
        idle_since: Option<Duration>,
    ) -> (ChannelHandle, mpsc::Receiver<BatchRequest>) {
        let (batches_in, batches_rx) = mpsc::channel(8);
        let handle = ChannelHandle {
            id,
            server,
            events: Mutex::new(EventQueue::default()),
            changed: watch::Sender::new(0),
            batches: AtomicU64::new(0),
            ended: CancellationToken::new(),
            ending: Mutex::new(None),
            last_batch: Mutex::new(idle_since),
            batches_in,
        };
        (handle, batches_rx)
    }

    /// Hands a batch to the channel's task and waits until it was applied (or refused). `None`
    /// when the channel ended first.
    pub async fn apply(&self, batch: Batch) -> Option<Result<Arrival, BatchRefused>> {
        let (reply, answer) = oneshot::channel();
        self.batches_in.send((batch, reply)).await.ok()?;
        answer.await.ok()
    }

    /// Ends the channel (once; the first reason stays).
    pub fn end(&self, ending: Ending) {
        let mut slot = self.ending.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_none() {
            *slot = Some(ending);
        }
        drop(slot);
        self.ended.cancel();
        self.changed.send_modify(|v| *v += 1);
    }

    pub fn ending(&self) -> Option<Ending> {
        *self.ending.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn is_ended(&self) -> bool {
        self.ended.is_cancelled()
    }

    pub fn ended(&self) -> &CancellationToken {
        &self.ended
    }

    /// When the last batch arrived; `None` for a channel its socket keeps alive.
    pub fn last_batch(&self) -> Option<Duration> {
        *self.last_batch.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A batch arrived at `now`: the idle clock restarts and answers waiting for a newer batch
    /// return.
    pub fn arrived(&self, now: Duration) -> Arrival {
        let mut last = self.last_batch.lock().unwrap_or_else(|e| e.into_inner());
        if last.is_some() {
            *last = Some(now);
        }
        drop(last);
        let arrival = self.batches.fetch_add(1, Ordering::SeqCst) + 1;
        self.changed.send_modify(|v| *v += 1);
        Arrival(arrival)
    }

    /// Whether a batch arrived after `arrival`.
    pub fn superseded(&self, arrival: Arrival) -> bool {
        self.batches.load(Ordering::SeqCst) != arrival.0
    }

    /// Something to wait on for a change (an event, a newer batch, the end).
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    pub fn events(&self) -> MutexGuard<'_, EventQueue> {
        self.events.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues `message` for `player`; a channel whose game server stopped reading ends.
    pub fn push(&self, player: &str, message: &banter_protocol::ServerMessage) {
        let pushed = self.events().push(player, message);
        if let Err(Overflow) = pushed {
            self.end(Ending::TooSlow);
        }
        self.changed.send_modify(|v| *v += 1);
    }

    /// Holds an answer until an event after `ack` waits, a newer batch arrives, the channel
    /// ends, `stop` is cancelled (the server shuts down) or `wait` passes.
    pub async fn wait_for_events(
        &self,
        ack: u64,
        arrival: Arrival,
        wait: Duration,
        stop: &CancellationToken,
    ) {
        if wait.is_zero() {
            return;
        }
        let mut changed = self.subscribe();
        let deadline = tokio::time::sleep(wait);
        tokio::pin!(deadline);
        loop {
            if self.events().waiting_after(ack) || self.superseded(arrival) || self.is_ended() {
                return;
            }
            tokio::select! {
                _ = &mut deadline => return,
                _ = stop.cancelled() => return,
                seen = changed.changed() => if seen.is_err() { return },
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use futures_util::FutureExt;

    use super::*;

    fn server() -> GameServer {
        GameServer {
            id: "gs_0".into(),
            name: "eu".into(),
            players: vec!["rbx-".into()],
            created_at_ms: 0,
            revoked_at_ms: None,
        }
    }

    #[test]
    fn a_batch_applies_once_in_order_and_a_retry_applies_nothing() {
        assert_eq!(sequence(1, 0), Ok(Sequenced::Next));
        assert_eq!(sequence(0, 0), Err(SeqError::Stale { seq: 0, applied: 0 }));
        assert_eq!(sequence(2, 0), Err(SeqError::Gap { seq: 2, next: 1 }));
        assert_eq!(sequence(5, 5), Ok(Sequenced::Retry));
        assert_eq!(sequence(6, 5), Ok(Sequenced::Next));
        assert_eq!(sequence(4, 5), Err(SeqError::Stale { seq: 4, applied: 5 }));
        assert_eq!(sequence(7, 5), Err(SeqError::Gap { seq: 7, next: 6 }));
    }

    #[tokio::test(start_paused = true)]
    async fn a_waiting_answer_returns_on_an_event_a_newer_batch_or_its_time() {
        let (handle, _rx) = ChannelHandle::new("ch_1".into(), server(), Some(Duration::ZERO));
        let handle = Arc::new(handle);
        let stop = CancellationToken::new();
        let first = handle.arrived(Duration::ZERO);

        // Its time: a paused clock runs ahead to the deadline.
        let waited = tokio::time::Instant::now();
        let wait = handle.wait_for_events(0, first, Duration::from_secs(20), &stop);
        tokio::pin!(wait);
        assert!(wait.as_mut().now_or_never().is_none());
        handle.push("rbx-1", &banter_protocol::ServerMessage::Ack { id: 1 });
        assert!(
            wait.as_mut().now_or_never().is_some(),
            "an event answers it"
        );
        assert_eq!(waited.elapsed(), Duration::ZERO);

        let second = handle.arrived(Duration::ZERO);
        let wait = handle.wait_for_events(1, second, Duration::from_secs(20), &stop);
        tokio::pin!(wait);
        assert!(wait.as_mut().now_or_never().is_none());
        handle.arrived(Duration::ZERO);
        assert!(
            wait.as_mut().now_or_never().is_some(),
            "a newer batch answers it"
        );

        let third = handle.arrived(Duration::ZERO);
        handle
            .wait_for_events(1, third, Duration::from_secs(20), &stop)
            .await;
        assert_eq!(waited.elapsed(), Duration::from_secs(20), "else its time");
    }
}
