//! [`WriteGate`]: the SQLite store's writers take turns here, players first.
//!
//! SQLite has one write lock per file. Left to contend for it, a writer that finds it taken
//! sleeps in SQLite's busy handler (1, 2, 5, 10, ... 100 ms between tries) while the writers
//! that happen to retry at the right moment go ahead: under a storm of session starts (a claim
//! and a release each) a player's quest write waited hundreds of milliseconds that way
//! (RELIABILITY.md, scenario 6). Here every write in the process waits in a queue instead, and
//! the lock, once free, goes straight to the next writer: no sleeping, no busy handler.
//!
//! Two queues: [`Priority::Player`] for the writes a player in conversation is waiting on
//! (quest changes, tracking, tutorial stage), [`Priority::Housekeeping`] for the rest
//! (session claims and releases, a first visit's profile, the audit log, pruning). A player's
//! write waits at most for the write in progress and the players queued before it. So that
//! housekeeping is never starved, it gets every [`PLAYER_TURNS_BEFORE_HOUSEKEEPING`]th turn
//! while players queue.
//!
//! SQLite's busy handler still arbitrates between processes sharing the file.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use super::timings::WriteTimings;

/// Which queue a writer waits in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Priority {
    /// A player in conversation waits for this write.
    Player,
    /// Nobody in conversation waits for this write: claims, releases, the audit log.
    Housekeeping,
}

impl Priority {
    /// Both, in [`Priority::index`] order.
    pub const ALL: [Priority; 2] = [Priority::Player, Priority::Housekeeping];

    /// Its place in [`Priority::ALL`].
    pub fn index(self) -> usize {
        match self {
            Priority::Player => 0,
            Priority::Housekeeping => 1,
        }
    }

    /// Its label on `/metrics`.
    pub fn label(self) -> &'static str {
        match self {
            Priority::Player => "player",
            Priority::Housekeeping => "housekeeping",
        }
    }
}

/// While both queues are waiting, one housekeeping turn follows this many player turns.
pub const PLAYER_TURNS_BEFORE_HOUSEKEEPING: u32 = 8;

#[derive(Debug, Default)]
struct Queues {
    held: bool,
    player: VecDeque<oneshot::Sender<()>>,
    housekeeping: VecDeque<oneshot::Sender<()>>,
    /// Player turns given in a row while housekeeping waited.
    player_streak: u32,
}

impl Queues {
    /// The next waiter in line, by priority and the anti-starvation rule.
    fn next(&mut self) -> Option<oneshot::Sender<()>> {
        let housekeeping_due = self.player_streak >= PLAYER_TURNS_BEFORE_HOUSEKEEPING;
        if !housekeeping_due && let Some(next) = self.player.pop_front() {
            if !self.housekeeping.is_empty() {
                self.player_streak += 1;
            }
            return Some(next);
        }
        if let Some(next) = self.housekeeping.pop_front() {
            self.player_streak = 0;
            return Some(next);
        }
        self.player.pop_front()
    }
}

/// A queue for one process's writers to one database. See the module docs.
#[derive(Debug, Default)]
pub struct WriteGate {
    queues: Mutex<Queues>,
    /// How long turns are waited for and held.
    timings: WriteTimings,
}

/// The right to write, held until dropped; then the next writer in line gets it.
#[derive(Debug)]
pub struct WriteTurn {
    gate: Arc<WriteGate>,
    priority: Priority,
    since: Instant,
}

/// Waiting for a turn gave up after the patience given to [`WriteGate::enter`].
#[derive(Debug)]
pub struct TimedOut;

impl WriteGate {
    fn lock(&self) -> MutexGuard<'_, Queues> {
        // The critical sections below cannot panic; recover the queues anyway rather than
        // poisoning every later write.
        self.queues.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A gate that records into `timings`.
    pub fn new(timings: WriteTimings) -> WriteGate {
        WriteGate {
            queues: Mutex::default(),
            timings,
        }
    }

    /// The turn, taken now, having waited since `asked`.
    fn turn(self: &Arc<Self>, priority: Priority, asked: Instant) -> WriteTurn {
        let since = Instant::now();
        self.timings
            .waited(priority, since.duration_since(asked).as_secs_f64());
        WriteTurn {
            gate: self.clone(),
            priority,
            since,
        }
    }

    /// Waits for this writer's turn, at most `patience`.
    pub async fn enter(
        self: &Arc<Self>,
        priority: Priority,
        patience: Duration,
    ) -> Result<WriteTurn, TimedOut> {
        let asked = Instant::now();
        let receiver = {
            let mut queues = self.lock();
            if !queues.held {
                queues.held = true;
                return Ok(self.turn(priority, asked));
            }
            let (sender, receiver) = oneshot::channel();
            match priority {
                Priority::Player => queues.player.push_back(sender),
                Priority::Housekeeping => queues.housekeeping.push_back(sender),
            }
            receiver
        };
        let mut waiting = Waiting {
            gate: self.clone(),
            receiver,
        };
        match tokio::time::timeout(patience, &mut waiting.receiver).await {
            // Handed over: `held` stayed true for us. `waiting` is dropped with the turn
            // already taken out of its channel, so its drop passes nothing on.
            Ok(Ok(())) => Ok(self.turn(priority, asked)),
            // The gate is dropped only with the store; nobody hands the turn over then.
            Ok(Err(_)) | Err(_) => Err(TimedOut),
        }
    }

    /// How many players' writes are waiting for a turn.
    pub fn players_waiting(&self) -> usize {
        self.lock().player.len()
    }

    /// Passes the turn to the next live waiter, or frees the gate.
    fn hand_over(&self) {
        let mut queues = self.lock();
        while let Some(next) = queues.next() {
            if next.send(()).is_ok() {
                return;
            }
            // That waiter gave up (timed out or was cancelled): try the next one.
        }
        queues.held = false;
    }
}

impl WriteTurn {
    /// Whether a player's write is waiting for this turn.
    pub fn players_waiting(&self) -> bool {
        self.gate.players_waiting() > 0
    }
}

impl Drop for WriteTurn {
    fn drop(&mut self) {
        let held = self.since.elapsed().as_secs_f64();
        self.gate.timings.held(self.priority, held);
        self.gate.hand_over();
    }
}

/// A queued waiter. If it is dropped after the turn was sent to it but before it took it
/// (a timeout or cancellation racing the hand-over), the turn is passed on here, so it is
/// never lost.
struct Waiting {
    gate: Arc<WriteGate>,
    receiver: oneshot::Receiver<()>,
}

impl Drop for Waiting {
    fn drop(&mut self) {
        self.receiver.close();
        if let Ok(()) = self.receiver.try_recv() {
            self.gate.hand_over();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Poll};

    const PATIENCE: Duration = Duration::from_secs(3600);

    fn poll_once<F: Future>(future: std::pin::Pin<&mut F>) -> Poll<F::Output> {
        let waker = futures_util::task::noop_waker();
        future.poll(&mut Context::from_waker(&waker))
    }

    /// Enters and returns the turn, or panics if it had to wait.
    fn enter_now(gate: &Arc<WriteGate>, priority: Priority) -> WriteTurn {
        let mut entering = pin!(gate.enter(priority, PATIENCE));
        match poll_once(entering.as_mut()) {
            Poll::Ready(Ok(turn)) => turn,
            _ => panic!("the gate was not free"),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_free_gate_is_entered_at_once_and_freed_by_dropping_the_turn() {
        let gate = Arc::new(WriteGate::default());
        let turn = enter_now(&gate, Priority::Housekeeping);
        let mut second = pin!(gate.enter(Priority::Player, PATIENCE));
        assert!(poll_once(second.as_mut()).is_pending());
        drop(turn);
        assert!(matches!(poll_once(second.as_mut()), Poll::Ready(Ok(_))));
    }

    #[tokio::test(start_paused = true)]
    async fn players_go_before_housekeeping_queued_earlier() {
        let gate = Arc::new(WriteGate::default());
        let first = enter_now(&gate, Priority::Housekeeping);
        let mut housekeeping = pin!(gate.enter(Priority::Housekeeping, PATIENCE));
        let mut player = pin!(gate.enter(Priority::Player, PATIENCE));
        assert!(poll_once(housekeeping.as_mut()).is_pending());
        assert!(poll_once(player.as_mut()).is_pending());
        drop(first);
        assert!(poll_once(housekeeping.as_mut()).is_pending());
        let Poll::Ready(Ok(turn)) = poll_once(player.as_mut()) else {
            panic!("the player did not get the turn");
        };
        drop(turn);
        assert!(matches!(
            poll_once(housekeeping.as_mut()),
            Poll::Ready(Ok(_))
        ));
    }

    #[tokio::test(start_paused = true)]
    async fn housekeeping_gets_a_turn_among_a_stream_of_players() {
        let gate = Arc::new(WriteGate::default());
        let mut turn = enter_now(&gate, Priority::Player);
        let mut housekeeping = Box::pin(gate.enter(Priority::Housekeeping, PATIENCE));
        assert!(poll_once(housekeeping.as_mut()).is_pending());
        // Players keep arriving, always one queued when the turn is handed over.
        let mut player_turns = 0;
        loop {
            let mut player = Box::pin(gate.enter(Priority::Player, PATIENCE));
            assert!(poll_once(player.as_mut()).is_pending());
            drop(turn);
            if let Poll::Ready(Ok(next)) = poll_once(housekeeping.as_mut()) {
                drop(next);
                break;
            }
            let Poll::Ready(Ok(next)) = poll_once(player.as_mut()) else {
                panic!("nobody got the turn");
            };
            turn = next;
            player_turns += 1;
            assert!(
                player_turns <= PLAYER_TURNS_BEFORE_HOUSEKEEPING,
                "housekeeping starved"
            );
        }
        assert_eq!(player_turns, PLAYER_TURNS_BEFORE_HOUSEKEEPING);
    }

    #[tokio::test(start_paused = true)]
    async fn a_waiter_that_gives_up_does_not_keep_the_turn() {
        let gate = Arc::new(WriteGate::default());
        let first = enter_now(&gate, Priority::Player);
        let impatient = gate
            .enter(Priority::Player, Duration::from_millis(10))
            .await;
        assert!(impatient.is_err());
        let mut cancelled = Box::pin(gate.enter(Priority::Player, PATIENCE));
        assert!(poll_once(cancelled.as_mut()).is_pending());
        let mut last = pin!(gate.enter(Priority::Housekeeping, PATIENCE));
        assert!(poll_once(last.as_mut()).is_pending());
        // Handed to `cancelled`, which is dropped before it takes the turn: passed on.
        drop(first);
        drop(cancelled);
        assert!(matches!(poll_once(last.as_mut()), Poll::Ready(Ok(_))));
    }

    #[tokio::test(start_paused = true)]
    async fn the_gate_is_free_again_when_everyone_is_done() {
        let gate = Arc::new(WriteGate::default());
        let first = enter_now(&gate, Priority::Player);
        let mut second = pin!(gate.enter(Priority::Housekeeping, PATIENCE));
        assert!(poll_once(second.as_mut()).is_pending());
        drop(first);
        let Poll::Ready(Ok(turn)) = poll_once(second.as_mut()) else {
            panic!("no turn");
        };
        drop(turn);
        drop(enter_now(&gate, Priority::Player));
    }

    #[tokio::test(start_paused = true)]
    async fn every_turn_is_timed_by_its_queue_waited_and_held() {
        use super::super::timings::PriorityLabels;
        let timings = WriteTimings::default();
        let gate = Arc::new(WriteGate::new(timings.clone()));
        let first = enter_now(&gate, Priority::Housekeeping);
        let mut player = pin!(gate.enter(Priority::Player, PATIENCE));
        assert!(poll_once(player.as_mut()).is_pending());
        drop(first);
        let Poll::Ready(Ok(turn)) = poll_once(player.as_mut()) else {
            panic!("the player's turn was handed over");
        };
        drop(turn);
        let counts = |priority: &'static str| {
            let labels = PriorityLabels { priority };
            (
                timings.turn_wait.get_or_create(&labels).count(),
                timings.turn_held.get_or_create(&labels).count(),
            )
        };
        assert_eq!(counts("housekeeping"), (1, 1));
        assert_eq!(counts("player"), (1, 1));
    }
}
