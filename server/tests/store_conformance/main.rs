//! Store conformance: the same scenarios against SQLite (a fresh file per test) and PostgreSQL (a
//! fresh schema per test in `TEST_DATABASE_URL`, default
//! `postgres://postgres@127.0.0.1:5432/test`). PostgreSQL being unreachable fails the suite; it
//! never skips.
//!
//! One module a topic, each ending with [`on_both_backends!`] over its
//! scenarios; what only one backend has is in `postgres_only` and `sqlite_only`. Here: the
//! helpers the scenarios share.

#[path = "../store_support/mod.rs"]
mod store_support;

/// Runs each named scenario (an `async fn(&TestDb)` of the calling module) as two tests:
/// `sqlite::name` on a fresh SQLite file and `postgres::name` in a fresh PostgreSQL schema.
macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let db = $crate::store_support::TestDb::sqlite(stringify!($name));
                    super::$name(&db).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let db = $crate::store_support::TestDb::postgres(stringify!($name)).await;
                    super::$name(&db).await;
                }
            )*
        }
    };
}

mod audit;
mod claims;
mod game_servers;
mod lifecycle;
mod locks;
mod parking;
mod parties;
mod postgres_only;
mod progress;
mod quests;
mod rewards;
mod rollups;
mod sqlite_only;
mod steps;
mod writing_power;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use banter_server::store::{
    Applied, Change, ClaimEvent, ObjectiveAdvance, Paid, PlayerRecord, SessionClaim, Step, Stepped,
    Store, StoreError, StoredQuestStatus, TutorialMove,
};
use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;

fn objectives(ids: &[&str]) -> Vec<String> {
    ids.iter().map(|s| (*s).to_owned()).collect()
}

fn progress_of(record: &PlayerRecord, quest: &str, objective: &str) -> Option<u32> {
    record
        .quests
        .get(quest)
        .and_then(|q| q.progress.get(objective).copied())
}

fn status_of(record: &PlayerRecord, quest: &str) -> Option<StoredQuestStatus> {
    record.quests.get(quest).map(|q| q.status)
}

/// Makes `racers` calls at once (a barrier lets them go together), alternating between `first`
/// and `second` (another instance, or the same store again); their outcomes, in order.
async fn at_once<T, F, Call>(
    first: &Arc<dyn Store>,
    second: &Arc<dyn Store>,
    racers: usize,
    call: F,
) -> Vec<T>
where
    F: Fn(Arc<dyn Store>) -> Call,
    Call: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let barrier = Arc::new(tokio::sync::Barrier::new(racers));
    let tasks: Vec<_> = (0..racers)
        .map(|i| {
            let store = if i % 2 == 0 { first } else { second };
            let (call, barrier) = (call(store.clone()), barrier.clone());
            tokio::spawn(async move {
                barrier.wait().await;
                call.await
            })
        })
        .collect();
    let mut outcomes = Vec::with_capacity(racers);
    for task in tasks {
        outcomes.push(task.await.expect("join"));
    }
    outcomes
}

/// Accepts `quest` for `player` with these objectives; a refusal fails the scenario.
async fn accept(store: &dyn Store, player: &str, quest: &str, ids: &[&str]) {
    store
        .accept_quest(player, quest, &objectives(ids))
        .await
        .expect("accept");
}

/// Completes `quest` for `player`, paying `coins` and `experience`; a refusal fails the
/// scenario.
async fn complete(
    store: &dyn Store,
    player: &str,
    quest: &str,
    coins: i64,
    experience: i64,
) -> Paid {
    store
        .complete_quest(player, quest, coins, experience)
        .await
        .expect("complete")
}

async fn load(store: &dyn Store, player: &str) -> PlayerRecord {
    store.load_player(player).await.expect("load_player")
}

/// What [`snapshot`] reads.
type Snapshot = (PlayerRecord, Vec<(String, i64, i64)>);

/// Everything the store holds about a player, plus its ledger: "nothing changed" compares these.
async fn snapshot(store: &dyn Store, player: &str) -> Snapshot {
    let ledger = store
        .ledger(player)
        .await
        .expect("ledger")
        .into_iter()
        .map(|e| (e.quest_id, e.coins, e.experience))
        .collect();
    (load(store, player).await, ledger)
}

/// Asserts that the store holds of `player` what it held when `before` was taken; `why` says
/// why nothing may have changed.
async fn assert_unchanged(store: &dyn Store, player: &str, before: &Snapshot, why: &str) {
    assert_eq!(&snapshot(store, player).await, before, "{why}");
}

const WAIT: Duration = Duration::from_secs(10);

async fn next_event(stream: &mut BoxStream<'static, ClaimEvent>) -> ClaimEvent {
    tokio::time::timeout(WAIT, stream.next())
        .await
        .expect("a claim event within 10 s")
        .expect("the claims stream is still open")
}

/// Waits for the claim of `player`, skipping other tests' claims (PostgreSQL's channel is per
/// database) and resyncs.
async fn next_claim_of(stream: &mut BoxStream<'static, ClaimEvent>, player: &str) -> SessionClaim {
    let deadline = Instant::now() + WAIT;
    loop {
        assert!(
            Instant::now() < deadline,
            "no claim of {player} within 10 s"
        );
        if let ClaimEvent::Claimed(claim) = next_event(stream).await
            && claim.player_id == player
        {
            return claim;
        }
    }
}

/// The writes the scenarios set players up with, each one audited step
/// ([`Store::apply_step`], the store's only write of player state) under a key of its own:
/// what the change returns, its errors as [`Change`](banter_server::store::Change) says.
trait Writes: Store {
    fn step_of<'a>(
        &'a self,
        player: &'a str,
        change: Change<'a>,
        tutorial: Option<TutorialMove>,
    ) -> BoxFuture<'a, Result<Stepped, StoreError>> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let key = format!("setup/{}", NEXT.fetch_add(1, Ordering::Relaxed));
        Box::pin(async move {
            let step = Step {
                player,
                key: &key,
                conversation: None,
                message: "setup",
                detail: None,
                recorded_us: 0,
                change,
                tutorial,
            };
            self.apply_step(&step).await
        })
    }

    fn accept_quest<'a>(
        &'a self,
        player: &'a str,
        quest: &'a str,
        objectives: &'a [String],
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let change = Change::Accept { quest, objectives };
        Box::pin(async move { self.step_of(player, change, None).await.map(|_| ()) })
    }

    fn advance_objectives<'a>(
        &'a self,
        player: &'a str,
        event_id: Option<&'a str>,
        advances: &'a [ObjectiveAdvance],
    ) -> BoxFuture<'a, Result<Vec<u32>, StoreError>> {
        let change = Change::Advance { event_id, advances };
        Box::pin(async move {
            match self.step_of(player, change, None).await?.applied {
                Applied::Advanced(progress) => Ok(progress),
                other => Err(StoreError::Corrupt(format!(
                    "an advance answered {other:?}"
                ))),
            }
        })
    }

    fn advance_objective<'a>(
        &'a self,
        player: &'a str,
        quest: &'a str,
        objective: &'a str,
        amount: u32,
        target: u32,
        event_id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<u32, StoreError>> {
        Box::pin(async move {
            let advances = [ObjectiveAdvance {
                quest: quest.to_owned(),
                objective: objective.to_owned(),
                amount,
                target,
            }];
            let progress = self.advance_objectives(player, event_id, &advances).await?;
            Ok(progress[0])
        })
    }

    fn complete_quest<'a>(
        &'a self,
        player: &'a str,
        quest: &'a str,
        coins: i64,
        experience: i64,
    ) -> BoxFuture<'a, Result<Paid, StoreError>> {
        let change = Change::Complete {
            quest,
            coins,
            experience,
            advances: &[],
        };
        Box::pin(async move {
            match self.step_of(player, change, None).await?.applied {
                Applied::Paid(paid) => Ok(paid),
                other => Err(StoreError::Corrupt(format!(
                    "a completion answered {other:?}"
                ))),
            }
        })
    }

    fn set_tracked_quest<'a>(
        &'a self,
        player: &'a str,
        quest: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let change = Change::Track { quest };
        Box::pin(async move { self.step_of(player, change, None).await.map(|_| ()) })
    }

    /// [`Store::apply_step`]'s [`Applied`], for scenarios about what a change did.
    fn applied<'a>(&'a self, step: &'a Step<'a>) -> BoxFuture<'a, Result<Applied, StoreError>> {
        Box::pin(async move { self.apply_step(step).await.map(|stepped| stepped.applied) })
    }

    /// Moves the tutorial from `from` to `to` (nothing if the stage is not `from`).
    fn move_tutorial<'a>(
        &'a self,
        player: &'a str,
        from: i64,
        to: i64,
    ) -> BoxFuture<'a, Result<Stepped, StoreError>> {
        let tutorial = Some(TutorialMove { from, to });
        self.step_of(player, Change::Profile, tutorial)
    }
}

impl<S: Store + ?Sized> Writes for S {}
