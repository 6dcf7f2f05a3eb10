//! Which sessions serve which player, in this process, and which of them stays.
//!
//! One source of truth decides which of a player's sessions stays: the store's claim. Every
//! session claims its player in the store (`Store::claim_session`, a row whose epoch grows with
//! every claim), and the session with the highest epoch is the player's session; every other one,
//! on this instance or any other, is told it was replaced (it says goodbye with the reason and
//! closes). Arrival order decides nothing: two connections racing on one instance may finish
//! their claims in either order, and the hub waits for the epochs instead of replacing the older
//! arrival on sight (which, disagreeing with the store, could close both).
//!
//! Across processes the store tells every instance of every claim (PostgreSQL LISTEN/NOTIFY);
//! [`Hub::on_claim`] then closes a local session that a newer claim replaced. A late notification
//! of an older claim never closes a newer session.

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::sync::mpsc;

use crate::store::SessionClaim;

/// What the hub (or the server) tells a running session.
#[derive(Debug)]
pub enum Control {
    /// A newer session took this player over.
    Replaced,
    /// A game event changed the player's quests: the session reloads the player's record from
    /// the store and pushes these effects (`objective_advanced`) to the client.
    Progress(Vec<banter_protocol::Effect>),
    /// A party or shared conversation's news for this session (PROTOCOL.md section 17).
    Shared(Box<crate::rooms::SharedEvent>),
}

/// The most control messages a session's queue holds; past it the session is on its way out.
const CONTROL_QUEUE: usize = 64;

/// A WebSocket session's control queue: a short queue and a wake-up, without the block of 32
/// slots a tokio channel allocates up front (the hub makes one per connection: BENCHMARKS.md,
/// memory per session).
#[derive(Debug, Default)]
pub struct ControlQueue {
    queue: Mutex<std::collections::VecDeque<Control>>,
    ready: tokio::sync::Notify,
}

impl ControlQueue {
    /// Queues `control`; false when the queue is full.
    pub fn try_send(&self, control: Control) -> bool {
        let mut queue = lock(&self.queue);
        if queue.len() >= CONTROL_QUEUE {
            return false;
        }
        queue.push_back(control);
        drop(queue);
        // A permit is kept if the session is not waiting yet: no wake-up is lost.
        self.ready.notify_one();
        true
    }

    /// The next control message, if one is queued.
    pub fn try_recv(&self) -> Option<Control> {
        lock(&self.queue).pop_front()
    }

    /// True when no control message is queued.
    pub fn is_empty(&self) -> bool {
        lock(&self.queue).is_empty()
    }

    /// Waits for the next control message.
    pub async fn recv(&self) -> Control {
        loop {
            if let Some(control) = self.try_recv() {
                return control;
            }
            self.ready.notified().await;
        }
    }
}

/// Where a session's control messages go.
#[derive(Clone, Debug)]
pub enum Deliver {
    /// A WebSocket session's own queue.
    Session(std::sync::Arc<ControlQueue>),
    /// A game-server channel's queue, shared by its players, each message under the session's
    /// number.
    Channel(mpsc::Sender<(u64, Control)>),
}

impl Deliver {
    /// Queues `control` for session `session`; false when the queue is full or gone.
    fn try_send(&self, session: u64, control: Control) -> bool {
        match self {
            Deliver::Session(queue) => queue.try_send(control),
            Deliver::Channel(tx) => tx.try_send((session, control)).is_ok(),
        }
    }
}

impl From<std::sync::Arc<ControlQueue>> for Deliver {
    fn from(queue: std::sync::Arc<ControlQueue>) -> Deliver {
        Deliver::Session(queue)
    }
}

/// One local session of a player.
#[derive(Debug)]
struct Entry {
    session: u64,
    control: Deliver,
    /// The game-server credential whose channel carries it; `None` for a direct WebSocket.
    carrier: Option<String>,
    /// This session's claim in the store, once it has one: its session key and epoch.
    claim: Option<(String, i64)>,
    /// Already told it was replaced.
    replaced: bool,
}

/// A player's local sessions (usually one; several while a reconnect races an older session)
/// and the newest claim heard from anywhere.
#[derive(Debug, Default)]
struct Local {
    sessions: Vec<Entry>,
    newest: Option<(String, i64)>,
}

impl Local {
    /// Tells every claimed local session older than the newest claim known that it was
    /// replaced. Returns how many were told.
    fn settle(&mut self) -> usize {
        let Some((key, epoch)) = &self.newest else {
            return 0;
        };
        let mut told = 0;
        for entry in &mut self.sessions {
            let older = entry
                .claim
                .as_ref()
                .is_some_and(|(k, e)| k != key && e < epoch);
            if older && !entry.replaced {
                entry.replaced = true;
                // A full control queue means the session is already on its way out.
                entry.control.try_send(entry.session, Control::Replaced);
                told += 1;
            }
        }
        told
    }

    fn hear(&mut self, key: &str, epoch: i64) {
        if self.newest.as_ref().is_none_or(|(_, e)| epoch > *e) {
            self.newest = Some((key.to_owned(), epoch));
        }
    }

    /// The session that serves the player now: the newest claim's, else the latest arrival.
    fn current(&self) -> Option<&Entry> {
        let live = self.sessions.iter().filter(|e| !e.replaced);
        live.clone()
            .filter(|e| e.claim.is_some())
            .max_by_key(|e| e.claim.as_ref().map(|(_, epoch)| *epoch))
            .or_else(|| live.max_by_key(|e| e.session))
    }
}

/// What the world remembers of a player between sessions, so reconnecting neither respawns the
/// body anywhere (a teleport) nor resets the time between conversations.
#[derive(Clone, Copy, Debug, Default)]
pub struct PlayerMemory {
    pub body: crate::world::Body,
    /// When the player last opened a conversation (time since the server started).
    pub last_talk: Option<std::time::Duration>,
}

#[derive(Debug, Default)]
pub struct Hub {
    players: Mutex<HashMap<String, Local>>,
    memory: Mutex<HashMap<String, PlayerMemory>>,
}

impl Hub {
    /// Registers a new session of the player. It replaces nobody yet: its claim will decide.
    pub fn register(&self, player: &str, session: u64, control: impl Into<Deliver>) {
        self.register_carried(player, session, control, None);
    }

    /// Registers a session a game-server channel of credential `carrier` carries (`None`: a
    /// direct WebSocket).
    pub fn register_carried(
        &self,
        player: &str,
        session: u64,
        control: impl Into<Deliver>,
        carrier: Option<&str>,
    ) {
        self.lock()
            .entry(player.to_owned())
            .or_default()
            .sessions
            .push(Entry {
                session,
                control: control.into(),
                carrier: carrier.map(str::to_owned),
                claim: None,
                replaced: false,
            });
    }

    /// The credential whose channel carries the player's live session on this instance, other
    /// than `carrier`: a session that may not be taken over from there.
    pub fn carried_elsewhere(&self, player: &str, carrier: Option<&str>) -> Option<String> {
        self.lock().get(player).and_then(|local| {
            local
                .sessions
                .iter()
                .filter(|e| !e.replaced)
                .filter_map(|e| e.carrier.as_deref())
                .find(|c| Some(*c) != carrier)
                .map(str::to_owned)
        })
    }

    /// Forgets this session of the player.
    pub fn unregister(&self, player: &str, session: u64) {
        let mut players = self.lock();
        if let Some(local) = players.get_mut(player) {
            local.sessions.retain(|e| e.session != session);
            if local.sessions.is_empty() {
                players.remove(player);
            }
        }
    }

    /// Records the store claim the player's session `session` now holds (key and epoch), and
    /// settles: every local session whose claim is older than the newest one known (this one,
    /// another local one, or one heard from another instance) is told it was replaced, this one
    /// included if a newer claim was heard first.
    pub fn claimed(&self, player: &str, session: u64, key: &str, epoch: i64) {
        let mut players = self.lock();
        let Some(local) = players.get_mut(player) else {
            return;
        };
        let Some(entry) = local.sessions.iter_mut().find(|e| e.session == session) else {
            return;
        };
        entry.claim = Some((key.to_owned(), epoch));
        local.hear(key, epoch);
        local.settle();
    }

    /// A claim made anywhere (this instance or another): every local session of the player with
    /// an older claim is told it was replaced; unclaimed ones compare when their claim arrives.
    /// Returns whether a session was told.
    pub fn on_claim(&self, claim: &SessionClaim) -> bool {
        let mut players = self.lock();
        let Some(local) = players.get_mut(&claim.player_id) else {
            return false;
        };
        local.hear(&claim.session_id, claim.epoch);
        local.settle() > 0
    }

    /// Every local session's claim: (player, session key, epoch), for a resync after missed
    /// notifications.
    pub fn claims(&self) -> Vec<(String, String, i64)> {
        self.lock()
            .iter()
            .flat_map(|(player, local)| {
                local.sessions.iter().filter_map(|e| {
                    e.claim
                        .as_ref()
                        .map(|(key, epoch)| (player.clone(), key.clone(), *epoch))
                })
            })
            .collect()
    }

    /// What the world remembers of the player (nothing for a first visit).
    pub fn recall(&self, player: &str) -> PlayerMemory {
        lock(&self.memory).get(player).copied().unwrap_or_default()
    }

    /// Records the player's body and talk time as they change.
    pub fn remember(&self, player: &str, memory: PlayerMemory) {
        lock(&self.memory).insert(player.to_owned(), memory);
    }

    /// Tells the player's current session on this server, if any. False if there is none or its
    /// control queue is full (it then reloads on a message already queued, or on its next
    /// check, which always reads the store).
    pub fn notify(&self, player: &str, control: Control) -> bool {
        self.lock()
            .get(player)
            .and_then(Local::current)
            .is_some_and(|e| e.control.try_send(e.session, control))
    }

    /// Asks every player's current local session to read its player from the store again (a
    /// content migration moved stored quests under it). Returns how many were asked.
    pub fn reload_everyone(&self) -> usize {
        self.lock()
            .values()
            .filter_map(Local::current)
            .filter(|e| e.control.try_send(e.session, Control::Progress(Vec::new())))
            .count()
    }

    /// The session serving the player on this server now, if any.
    pub fn current(&self, player: &str) -> Option<u64> {
        self.lock()
            .get(player)
            .and_then(Local::current)
            .map(|e| e.session)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Local>> {
        lock(&self.players)
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn queue() -> (Arc<ControlQueue>, Arc<ControlQueue>) {
        let queue = Arc::new(ControlQueue::default());
        (queue.clone(), queue)
    }

    fn claim(player: &str, session: &str, epoch: i64) -> SessionClaim {
        SessionClaim {
            player_id: player.into(),
            session_id: session.into(),
            instance_id: "other".into(),
            epoch,
        }
    }

    #[test]
    fn a_newer_claim_elsewhere_replaces_and_an_older_or_own_one_does_not() {
        let hub = Hub::default();
        let (tx, rx) = queue();
        hub.register("p", 1, tx);
        hub.claimed("p", 1, "a:1", 5);
        assert!(!hub.on_claim(&claim("p", "a:1", 5)), "its own claim");
        assert!(!hub.on_claim(&claim("p", "b:9", 4)), "a late, older claim");
        assert!(rx.try_recv().is_none());
        assert!(hub.on_claim(&claim("p", "b:9", 6)));
        assert!(matches!(rx.try_recv(), Some(Control::Replaced)));
        assert!(!hub.on_claim(&claim("nobody", "b:1", 1)));
        assert_eq!(hub.claims(), vec![("p".into(), "a:1".into(), 5)]);
    }

    #[test]
    fn a_newer_claim_heard_before_the_own_claim_is_known_still_replaces() {
        let hub = Hub::default();
        let (tx, rx) = queue();
        hub.register("p", 1, tx);
        assert!(!hub.on_claim(&claim("p", "b:9", 8)));
        assert!(!hub.on_claim(&claim("p", "b:7", 3)));
        hub.claimed("p", 1, "a:1", 7);
        assert!(matches!(rx.try_recv(), Some(Control::Replaced)));

        let (tx, rx) = queue();
        hub.register("q", 2, tx);
        assert!(!hub.on_claim(&claim("q", "b:1", 2)));
        hub.claimed("q", 2, "a:2", 3);
        assert!(rx.try_recv().is_none(), "the claim heard early was older");
    }
    #[test]
    fn two_local_sessions_racing_leave_the_higher_epoch_whatever_order_the_claims_finish_in() {
        for newer_claims_first in [false, true] {
            let hub = Hub::default();
            let (tx1, rx1) = queue();
            let (tx2, rx2) = queue();
            // Session 1 arrived first but its claim got the higher epoch.
            hub.register("p", 1, tx1);
            hub.register("p", 2, tx2);
            if newer_claims_first {
                hub.claimed("p", 1, "a:1", 9);
                hub.claimed("p", 2, "a:2", 8);
            } else {
                hub.claimed("p", 2, "a:2", 8);
                hub.claimed("p", 1, "a:1", 9);
            }
            assert!(rx1.try_recv().is_none(), "the newest claim stays");
            assert!(matches!(rx2.try_recv(), Some(Control::Replaced)));
            assert_eq!(hub.current("p"), Some(1));
        }
    }

    /// Sessions register, claim (epochs in a shuffled order) and hear other instances' claims in
    /// every interleaving a small seeded generator makes: exactly one session is never told it
    /// was replaced, and it is the one with the highest epoch among all claims, if local.
    #[test]
    fn any_interleaving_of_claims_leaves_exactly_the_newest_session() {
        let mut state: u64 = 0x5EED;
        let mut next = |n: usize| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 33) as usize) % n
        };
        for _ in 0..500 {
            let hub = Hub::default();
            let sessions = 2 + next(15);
            let mut epochs: Vec<i64> = (1..=sessions as i64).collect();
            for i in (1..epochs.len()).rev() {
                epochs.swap(i, next(i + 1));
            }
            let mut receivers = Vec::new();
            for s in 0..sessions {
                let (tx, rx) = queue();
                hub.register("p", s as u64, tx);
                receivers.push(rx);
            }
            let mut order: Vec<usize> = (0..sessions).collect();
            for i in (1..order.len()).rev() {
                order.swap(i, next(i + 1));
            }
            for &s in &order {
                // Each claim is also heard back as a notification, sometimes first.
                let key = format!("a:{s}");
                if next(2) == 0 {
                    hub.on_claim(&SessionClaim {
                        player_id: "p".into(),
                        session_id: key.clone(),
                        instance_id: "a".into(),
                        epoch: epochs[s],
                    });
                }
                hub.claimed("p", s as u64, &key, epochs[s]);
            }
            let alive: Vec<usize> = receivers
                .iter_mut()
                .enumerate()
                .filter_map(|(s, rx)| rx.try_recv().is_none().then_some(s))
                .collect();
            let newest = (0..sessions).max_by_key(|&s| epochs[s]);
            assert_eq!(alive, newest.into_iter().collect::<Vec<_>>());
        }
    }
}
