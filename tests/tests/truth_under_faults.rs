//! Every answer is true when the database connection drops while a COMMIT is in flight: a real
//! server on PostgreSQL whose connections pass through a [`CommitCutter`], players paid through
//! Pim's tale, and the COMMIT of their payout cut, after it reached the database (it lands, the
//! server never hears) or before (it never lands). Each player must be told exactly what
//! happened: the effect when the ledger has the payout, a retryable refusal when it does not,
//! and a retry of the same armed action must be the truth about both attempts.
//!
//! SQLite has no connection to lose: a write there either returns or the process is gone.

use std::time::Duration;

use banter_e2e::{Client, PIMS_QUEST, TestServer};
use banter_protocol::{ActionType, Effect, ErrorCode, ServerMessage};
use banter_test_db::cutter::{CommitCutter, Cut};
use banter_test_db::{Backend, postgres_addr, postgres_url_via, test_database_url};

const NEAR_PIM: [f64; 3] = [-640.0, 2.0, 910.0];

/// Pim's reward (content/quests.json).
const PIMS_COINS: i64 = 30;

fn paid(messages: &[ServerMessage]) -> bool {
    messages.iter().any(|m| {
        matches!(
            m,
            ServerMessage::Effect {
                effect: Effect::QuestCompleted { quest, coins, .. },
                profile,
                ..
            } if quest == PIMS_QUEST && *coins == PIMS_COINS && profile.coins == PIMS_COINS
        )
    })
}

async fn ledger_rows(server: &TestServer, player: &str) -> i64 {
    server
        .database()
        .scalar(&format!(
            "SELECT COUNT(*) FROM reward_ledger WHERE player_id = '{player}'"
        ))
        .await
}

async fn step_rows(server: &TestServer, player: &str) -> i64 {
    server
        .database()
        .scalar(&format!(
            "SELECT COUNT(*) FROM audit_log WHERE player_id = '{player}' AND step_key IS NOT NULL \
             AND detail LIKE 'CompleteQuest%'"
        ))
        .await
}

/// A player at the line that pays Pim's tale.
async fn ready_to_be_paid(server: &TestServer, device: &str) -> (Client, String) {
    let (token, player) = server.login_player(device).await;
    let mut client = server.connect(&token).await;
    client.move_to(NEAR_PIM).await.expect("spawned near Pim");
    client.talk("Pim").await.expect("talk");
    client.hear_pims_tale().await;
    (client, player)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_payout_whose_commit_is_cut_is_told_exactly_as_it_happened() {
    let upstream = postgres_addr(&test_database_url()).expect("PostgreSQL's address");
    let cutter = CommitCutter::start(upstream).await.expect("proxy");
    let proxy = cutter.addr();
    let server = TestServer::start_on_with(Backend::Postgres, |c| {
        c.database_url = postgres_url_via(&c.database_url, proxy);
        c.world.talk_cooldown = Duration::ZERO;
    })
    .await;

    let mut cut = 0;
    for (round, mode) in [Cut::AfterCommit, Cut::BeforeCommit]
        .into_iter()
        .cycle()
        .take(6)
        .enumerate()
    {
        let (mut client, player) =
            ready_to_be_paid(&server, &format!("device-truth-{round}")).await;
        cutter.arm(mode, 1);
        let told = client.action(ActionType::CompleteQuest, PIMS_QUEST).await;
        cut += 1;
        assert_eq!(
            cutter.cuts(),
            cut,
            "round {round}: the payout's COMMIT was cut"
        );
        let landed = ledger_rows(&server, &player).await;
        match (mode, &told) {
            // Landed unheard: the server found out and says so.
            (Cut::AfterCommit, Ok(reply)) => {
                assert!(paid(&reply.messages), "round {round}: {:?}", reply.messages);
                assert_eq!(landed, 1, "round {round}: told paid, and paid");
            }
            // Never landed: a retryable refusal, nothing paid, the arming kept.
            (Cut::BeforeCommit, Err(refused)) => {
                assert!(
                    matches!(
                        refused.code,
                        ErrorCode::StoreUnavailable | ErrorCode::OutcomeUnknown
                    ),
                    "round {round}: {refused:?}"
                );
                assert!(!refused.message.contains("i/o"), "{}", refused.message);
                assert_eq!(landed, 0, "round {round}: told not paid, and not paid");
            }
            other => panic!("round {round}: {other:?} with {landed} ledger rows"),
        }
        // The same armed action again: the truth about both attempts, paid once.
        let retried = client.action(ActionType::CompleteQuest, PIMS_QUEST).await;
        match (mode, retried) {
            (Cut::AfterCommit, Err(refused)) => {
                // The arming was spent by the payout that landed.
                assert_eq!(refused.code, ErrorCode::NotArmed, "round {round}");
            }
            (Cut::BeforeCommit, Ok(reply)) => {
                assert!(paid(&reply.messages), "round {round}: {:?}", reply.messages);
            }
            other => panic!("round {round}: the retry got {other:?}"),
        }
        let (ledger, audited) = (
            ledger_rows(&server, &player).await,
            step_rows(&server, &player).await,
        );
        // The figures scripts/fault-runs prints: told against happened, per round.
        eprintln!(
            "round {round}: COMMIT cut {}: first answer {}, ledger rows after the first {landed}, after the retry {ledger}, payout audit rows {audited}",
            match mode {
                Cut::AfterCommit => "after it reached the database",
                Cut::BeforeCommit => "before it reached the database",
                Cut::Never => "never",
            },
            match &told {
                Ok(_) => "paid".to_owned(),
                Err(refused) => refused.code.name().to_owned(),
            }
        );
        assert_eq!(ledger, 1, "round {round}");
        assert_eq!(
            audited, 1,
            "round {round}: the payout has exactly one audit row, written with it"
        );
    }
    server.stop().await.expect("clean shutdown");
}

/// A stop (SIGTERM, in the binary) while the database hangs with a payout in flight: the server
/// keeps to its shutdown grace instead of waiting on the database, and what the payout did is
/// whatever the ledger says once the database answers again, never half of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_keeps_to_its_grace_while_the_database_hangs() {
    let upstream = postgres_addr(&test_database_url()).expect("PostgreSQL's address");
    let cutter = CommitCutter::start(upstream).await.expect("proxy");
    let proxy = cutter.addr();
    let grace = Duration::from_secs(2);
    let server = TestServer::start_on_with(Backend::Postgres, |c| {
        c.database_url = postgres_url_via(&c.database_url, proxy);
        c.shutdown_grace = grace;
    })
    .await;
    let (mut client, player) = ready_to_be_paid(&server, "device-truth-stop").await;
    cutter.freeze();
    client
        .send(&banter_protocol::ClientMessage::Action {
            id: Some(99),
            action: ActionType::CompleteQuest,
            payload: PIMS_QUEST.to_owned(),
        })
        .await;
    let database = server.database_handle();
    let stopping = std::time::Instant::now();
    server.stop().await.expect("a clean stop");
    let took = stopping.elapsed();
    eprintln!("stopped {took:?} after the stop signal, grace {grace:?}");
    // The grace is the promise; the margin is for a loaded CI machine's scheduling only.
    assert!(
        took < grace + Duration::from_secs(1),
        "stopped after {took:?} with a grace of {grace:?}"
    );
    cutter.thaw();
    let ledger = database
        .scalar(&format!(
            "SELECT COUNT(*) FROM reward_ledger WHERE player_id = '{player}'"
        ))
        .await;
    let steps = database
        .scalar(&format!(
            "SELECT COUNT(*) FROM audit_log WHERE player_id = '{player}' AND detail LIKE 'CompleteQuest%'"
        ))
        .await;
    assert_eq!(ledger, steps, "a payout and its audit row, or neither");
}
