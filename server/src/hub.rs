//! Which session serves which player, in this process.
//!
//! A player who connects again replaces the older session: the hub tells the old one (it says
//! goodbye with the reason and closes) and hands the player to the new one.
//!
//! Across processes the database coordinates, not this map: every session claims its player in
//! the store (`Store::claim_session`, a row with an epoch that grows with every claim), and the
//! store tells every instance of every claim (PostgreSQL LISTEN/NOTIFY). [`Hub::on_claim`] then
//! closes a local session that a newer claim replaced. Epochs, not arrival order, decide which
//! claim is newer, so a late notification of an older claim never closes a newer session.

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::sync::mpsc;

use crate::store::SessionClaim;

/// What the hub (or the server) tells a running session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Control {
    /// A newer session took this player over.
    Replaced,
    /// A game event changed the player's quests: the session reloads the player's record from
    /// the store and pushes these effects (`objective_advanced`) to the client.
    Progress(Vec<banter_protocol::Effect>),
}

#[derive(Debug)]
struct Entry {
    session: u64,
    control: mpsc::Sender<Control>,
    /// This session's claim in the store, once it has one: its session key and epoch.
    claim: Option<(String, i64)>,
    /// The newest claim of another session heard before this one's own claim was known; it is
    /// compared when that claim arrives ([`Hub::claimed`]).
    heard: Option<SessionClaim>,
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
    players: Mutex<HashMap<String, Entry>>,
    memory: Mutex<HashMap<String, PlayerMemory>>,
}

impl Hub {
    /// Registers `session` as the player's current one, telling any older session to go.
    pub fn register(&self, player: &str, session: u64, control: mpsc::Sender<Control>) {
        let old = self.lock().insert(
            player.to_owned(),
            Entry {
                session,
                control,
                claim: None,
                heard: None,
            },
        );
        if let Some(old) = old {
            // A full control queue means the old session is already on its way out.
            let _ = old.control.try_send(Control::Replaced);
        }
    }

    /// Forgets the player's session, if it is still this one (a replaced session must not
    /// unregister its successor).
    pub fn unregister(&self, player: &str, session: u64) {
        let mut players = self.lock();
        if players.get(player).is_some_and(|e| e.session == session) {
            players.remove(player);
        }
    }

    /// Records the store claim the player's session `session` now holds. If a newer claim of
    /// another session was heard meanwhile, the session is told it was replaced.
    pub fn claimed(&self, player: &str, session: u64, key: &str, epoch: i64) {
        let mut players = self.lock();
        let Some(entry) = players.get_mut(player).filter(|e| e.session == session) else {
            return;
        };
        entry.claim = Some((key.to_owned(), epoch));
        if let Some(heard) = entry.heard.take()
            && heard.session_id != key
            && heard.epoch > epoch
        {
            let _ = entry.control.try_send(Control::Replaced);
        }
    }

    /// A claim made anywhere (this instance or another): the player's local session, if it is
    /// another session with an older claim, is told it was replaced. Returns whether it was.
    pub fn on_claim(&self, claim: &SessionClaim) -> bool {
        let mut players = self.lock();
        let Some(entry) = players.get_mut(&claim.player_id) else {
            return false;
        };
        match &entry.claim {
            Some((key, epoch)) => {
                if *key != claim.session_id && claim.epoch > *epoch {
                    return entry.control.try_send(Control::Replaced).is_ok();
                }
                false
            }
            None => {
                // Not claimed yet: keep the newest claim heard, for `claimed` to compare.
                if entry.heard.as_ref().is_none_or(|h| claim.epoch > h.epoch) {
                    entry.heard = Some(claim.clone());
                }
                false
            }
        }
    }

    /// Every local session's claim: (player, session key, epoch), for a resync after missed
    /// notifications.
    pub fn claims(&self) -> Vec<(String, String, i64)> {
        self.lock()
            .iter()
            .filter_map(|(player, e)| {
                e.claim
                    .as_ref()
                    .map(|(key, epoch)| (player.clone(), key.clone(), *epoch))
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
            .is_some_and(|e| e.control.try_send(control).is_ok())
    }

    pub fn current(&self, player: &str) -> Option<u64> {
        self.lock().get(player).map(|e| e.session)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
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
    use super::*;

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
        let (tx, mut rx) = mpsc::channel(4);
        hub.register("p", 1, tx);
        hub.claimed("p", 1, "a:1", 5);
        assert!(!hub.on_claim(&claim("p", "a:1", 5)), "its own claim");
        assert!(!hub.on_claim(&claim("p", "b:9", 4)), "a late, older claim");
        assert!(rx.try_recv().is_err());
        assert!(hub.on_claim(&claim("p", "b:9", 6)));
        assert_eq!(rx.try_recv().ok(), Some(Control::Replaced));
        assert!(!hub.on_claim(&claim("nobody", "b:1", 1)));
        assert_eq!(hub.claims(), vec![("p".into(), "a:1".into(), 5)]);
    }

    #[test]
    fn a_newer_claim_heard_before_the_own_claim_is_known_still_replaces() {
        let hub = Hub::default();
        let (tx, mut rx) = mpsc::channel(4);
        hub.register("p", 1, tx);
        assert!(!hub.on_claim(&claim("p", "b:9", 8)));
        assert!(!hub.on_claim(&claim("p", "b:7", 3)));
        hub.claimed("p", 1, "a:1", 7);
        assert_eq!(rx.try_recv().ok(), Some(Control::Replaced));

        let (tx, mut rx) = mpsc::channel(4);
        hub.register("q", 2, tx);
        assert!(!hub.on_claim(&claim("q", "b:1", 2)));
        hub.claimed("q", 2, "a:2", 3);
        assert!(rx.try_recv().is_err(), "the claim heard early was older");
    }
}
