//! Which session serves which player, in this process.
//!
//! A player who connects again replaces the older session: the hub tells the old one (it says
//! goodbye with the reason and closes) and hands the player to the new one. Across processes the
//! database coordinates, not this map (see the scale-out issue).

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::sync::mpsc;

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
        let old = self
            .lock()
            .insert(player.to_owned(), Entry { session, control });
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
