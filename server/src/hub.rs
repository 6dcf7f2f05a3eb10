//! Which session serves which player, in this process.
//!
//! A player who connects again replaces the older session: the hub tells the old one (it says
//! goodbye with the reason and closes) and hands the player to the new one. Across processes the
//! database coordinates, not this map (see the scale-out issue).

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::sync::mpsc;

/// What the hub (or the server) tells a running session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Control {
    /// A newer session took this player over.
    Replaced,
}

#[derive(Debug)]
struct Entry {
    session: u64,
    control: mpsc::Sender<Control>,
}

#[derive(Debug, Default)]
pub struct Hub {
    players: Mutex<HashMap<String, Entry>>,
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

    pub fn current(&self, player: &str) -> Option<u64> {
        self.lock().get(player).map(|e| e.session)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        match self.players.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        }
    }
}
