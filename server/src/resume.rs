//! Resuming a conversation after a dropped connection.
//!
//! When a session ends without a goodbye the client chose (the connection dropped, the peer went
//! silent, a reconnect replaced it, the client stopped reading, the server shut down) and a
//! conversation was open, the session parks that conversation, walk and all, under the player
//! and the session's resume token: the walk in the store (`SessionStore::park_conversation`,
//! taken back exactly once on any instance), and here the content version it opened with. A new
//! session of the player that sends `resume` with that token within the grace window takes it
//! back: the same reachable set, the same armings. After the window, or once the player opens
//! another conversation, the parked one is gone and `resume` is refused.
//!
//! A reconnect usually arrives before the server has noticed the old connection is dead: the new
//! session replaces the old one, which parks its conversation as it winds down. `take` therefore
//! waits (briefly, on a notification, never a poll) while an older session of the player is
//! still running.
//!
//! This lot is what one process knows: which of its sessions are still running (so a resume waits
//! for them) and the content versions its parked conversations opened with. A resume on another
//! instance finds no entry here, and asks the store (`session::core`). A client that closes the
//! connection itself (a WebSocket Close) chose to leave: nothing is parked.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::Notify;

struct Parked<T> {
    token: String,
    until: Duration,
    value: T,
}

/// Conversations waiting to be resumed, and how many sessions of each player are running.
pub struct ParkingLot<T> {
    inner: Mutex<Inner<T>>,
    changed: Notify,
}

struct Inner<T> {
    parked: HashMap<String, Parked<T>>,
    live: HashMap<String, usize>,
}

impl<T> Default for ParkingLot<T> {
    fn default() -> Self {
        ParkingLot {
            inner: Mutex::new(Inner {
                parked: HashMap::new(),
                live: HashMap::new(),
            }),
            changed: Notify::new(),
        }
    }
}

impl<T> ParkingLot<T> {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner<T>> {
        match self.inner.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// A session of the player started.
    pub fn session_started(&self, player: &str) {
        *self.lock().live.entry(player.to_owned()).or_default() += 1;
    }

    /// A session of the player ended (after parking what it parks).
    pub fn session_ended(&self, player: &str) {
        {
            let mut inner = self.lock();
            if let Some(n) = inner.live.get_mut(player) {
                *n -= 1;
                if *n == 0 {
                    inner.live.remove(player);
                }
            }
        }
        self.changed.notify_waiters();
    }

    /// Parks the player's conversation until `until` (server time) under `token`, replacing
    /// any older one. Expired entries of every player are swept on the way.
    pub fn park(&self, player: &str, token: String, until: Duration, now: Duration, value: T) {
        {
            let mut inner = self.lock();
            inner.parked.retain(|_, p| p.until > now);
            inner.parked.insert(
                player.to_owned(),
                Parked {
                    token,
                    until,
                    value,
                },
            );
        }
        self.changed.notify_waiters();
    }

    /// Forgets the player's parked conversation (the player opened another one).
    pub fn discard(&self, player: &str) {
        self.lock().parked.remove(player);
    }

    /// How many conversations are parked (expired ones included until swept).
    pub fn len(&self) -> usize {
        self.lock().parked.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Takes the player's parked conversation, with the end of its window, if `token` is the one
    /// it was parked under and its window is open at `now()`. While another session of the player
    /// is still running (it may be about to park), waits for it, at most `patience`.
    pub async fn take(
        &self,
        player: &str,
        token: &str,
        now: impl Fn() -> Duration,
        patience: Duration,
    ) -> Option<(T, Duration)> {
        let deadline = tokio::time::Instant::now() + patience;
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut inner = self.lock();
                if let Some(parked) = inner.parked.get(player) {
                    if parked.token != token {
                        return None;
                    }
                    let parked = inner.parked.remove(player)?;
                    return (parked.until > now()).then_some((parked.value, parked.until));
                }
                // Only this session runs: nothing will be parked for it.
                if inner.live.get(player).copied().unwrap_or(0) <= 1 {
                    return None;
                }
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEC: Duration = Duration::from_secs(1);

    #[tokio::test]
    async fn the_right_token_within_the_window_takes_it_once() {
        let lot = ParkingLot::default();
        lot.session_started("p");
        lot.park("p", "t1".into(), 30 * SEC, SEC, "walk");
        assert_eq!(lot.take("p", "wrong", || 2 * SEC, SEC).await, None);
        assert_eq!(lot.take("q", "t1", || 2 * SEC, SEC).await, None);
        assert_eq!(
            lot.take("p", "t1", || 2 * SEC, SEC).await,
            Some(("walk", 30 * SEC))
        );
        assert_eq!(lot.take("p", "t1", || 2 * SEC, SEC).await, None, "once");
    }

    #[tokio::test]
    async fn after_the_window_or_a_discard_it_is_gone() {
        let lot = ParkingLot::default();
        lot.session_started("p");
        lot.park("p", "t1".into(), 30 * SEC, SEC, 1);
        assert_eq!(lot.take("p", "t1", || 31 * SEC, SEC).await, None);
        lot.park("p", "t2".into(), 30 * SEC, SEC, 2);
        lot.discard("p");
        assert_eq!(lot.take("p", "t2", || 2 * SEC, SEC).await, None);
        lot.park("p", "t3".into(), 2 * SEC, SEC, 3);
        lot.park("q", "t4".into(), 60 * SEC, 5 * SEC, 4);
        assert_eq!(lot.len(), 1, "the expired one was swept");
    }

    #[tokio::test]
    async fn a_take_waits_for_the_older_session_to_park() {
        let lot = std::sync::Arc::new(ParkingLot::default());
        lot.session_started("p"); // the old session, still winding down
        lot.session_started("p"); // the new one, resuming
        let parker = {
            let lot = lot.clone();
            tokio::spawn(async move {
                tokio::task::yield_now().await;
                lot.park("p", "old".into(), 30 * SEC, SEC, "walk");
                lot.session_ended("p");
            })
        };
        let taken = lot.take("p", "old", || 2 * SEC, 10 * SEC).await;
        assert_eq!(taken, Some(("walk", 30 * SEC)));
        parker.await.expect("parker");
        // With no older session left, a miss answers at once.
        assert_eq!(lot.take("p", "old", || 2 * SEC, 10 * SEC).await, None);
    }
}
