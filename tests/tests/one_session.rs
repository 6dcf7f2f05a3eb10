//! Exactly one session per player, always: connections of one player racing each other end with
//! exactly one session open and every other told `bye{replaced}`, never zero and never two. The
//! race is 16 connects started together, 50 rounds, on one instance of each backend and spread
//! over two instances on one PostgreSQL.
//!
//! Each round waits (bounded, never sleeping) for 15 `replaced` goodbyes; then the 16th must still
//! answer a request, and still answer one after the next round has run, so a goodbye that arrives
//! late is caught too.

use std::sync::Arc;
use std::time::{Duration, Instant};

use banter_e2e::{Backend, Client, TestServer, connect_raw_at};
use banter_protocol::{ByeReason, ClientMessage, ServerMessage};
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use tokio::sync::Barrier;

/// Connections of one player racing in each round.
const CONNECTIONS: usize = 16;
/// Rounds, each with a fresh player.
const ROUNDS: usize = 50;
/// How long a round may take to settle before it fails: a bound that turns a hang (or a second
/// survivor, who never hears anything) into a failure, not a wait.
const SETTLE: Duration = Duration::from_secs(20);

/// Starts [`CONNECTIONS`] connects of the player with `token` at the same moment, spread over
/// `servers` in turn, and waits for every `welcome`.
async fn connect_together(servers: &[&TestServer], token: &str) -> Vec<Client> {
    let barrier = Arc::new(Barrier::new(CONNECTIONS));
    let tasks: Vec<_> = (0..CONNECTIONS)
        .map(|n| {
            let addr = servers[n % servers.len()].addr;
            let token = token.to_owned();
            let barrier = barrier.clone();
            tokio::spawn(async move {
                barrier.wait().await;
                let mut client = connect_raw_at(addr, &token)
                    .await
                    .unwrap_or_else(|e| panic!("connection {n}: upgrade refused: {e}"));
                match client.recv_within(SETTLE).await {
                    Ok(Some(ServerMessage::Welcome { .. })) => client,
                    other => panic!("connection {n}: expected welcome, got {other:?}"),
                }
            })
        })
        .collect();
    let mut clients = Vec::with_capacity(CONNECTIONS);
    for task in tasks {
        clients.push(task.await.expect("the connect task does not panic"));
    }
    clients
}

/// Waits until all but one of `clients` were told `bye{replaced}`; the one left. Fails if any
/// connection hears anything else first, or if more than one stays silent for [`SETTLE`].
async fn the_one_left(mut clients: Vec<Client>, round: usize) -> Client {
    let mut replaced = Vec::new();
    let mut silent = Vec::new();
    {
        let mut first_words: FuturesUnordered<_> = clients
            .iter_mut()
            .enumerate()
            .map(|(n, client)| async move { (n, client.recv_within(SETTLE).await) })
            .collect();
        while replaced.len() < CONNECTIONS - 1 {
            match first_words.next().await {
                Some((
                    n,
                    Ok(Some(ServerMessage::Bye {
                        reason: ByeReason::Replaced,
                        ..
                    })),
                )) => replaced.push(n),
                Some((n, Ok(other))) => {
                    panic!("round {round}, connection {n}: expected bye{{replaced}}, got {other:?}")
                }
                Some((n, Err(_))) => silent.push(n),
                None => break,
            }
        }
    }
    assert_eq!(
        replaced.len(),
        CONNECTIONS - 1,
        "round {round}: {} sessions were replaced and {} stayed open ({silent:?}); \
         exactly one must stay open",
        replaced.len(),
        CONNECTIONS - replaced.len()
    );
    let survivor = (0..CONNECTIONS)
        .find(|n| !replaced.contains(n))
        .expect("one connection was not replaced");
    clients.swap_remove(survivor)
}

/// The session answers a request with its ack, and was told nothing before it (no goodbye).
async fn assert_alive(client: &mut Client, round: usize, id: u64, when: &str) {
    client
        .send(&ClientMessage::SetAfk {
            id: Some(id),
            afk: false,
        })
        .await;
    match client.recv_within(SETTLE).await {
        Ok(Some(ServerMessage::Ack { id: acked })) if acked == id => {}
        Ok(Some(ServerMessage::Bye { reason, .. })) => panic!(
            "round {round}: the last session was told bye{{{reason:?}}} {when}: no session is left"
        ),
        other => panic!("round {round}: the last session {when}: expected ack {id}, got {other:?}"),
    }
}

/// The race, [`ROUNDS`] times, a fresh player each round, connections spread over `servers`.
async fn race(servers: &[&TestServer], label: &str) {
    let started = Instant::now();
    let mut slowest = Duration::ZERO;
    let mut previous: Option<(usize, Client)> = None;
    for round in 0..ROUNDS {
        let begun = Instant::now();
        let token = servers[0]
            .login(&format!("device-one-session-{label}-{round:03}"))
            .await;
        let clients = connect_together(servers, &token).await;
        let mut survivor = the_one_left(clients, round).await;
        assert_alive(&mut survivor, round, 1, "after the others were replaced").await;
        slowest = slowest.max(begun.elapsed());
        // The previous round's survivor is still the one: no goodbye reached it late.
        if let Some((last_round, mut last)) = previous.take() {
            assert_alive(&mut last, last_round, 2, "one round later").await;
        }
        previous = Some((round, survivor));
    }
    if let Some((last_round, mut last)) = previous.take() {
        assert_alive(&mut last, last_round, 2, "at the end").await;
    }
    eprintln!(
        "{label}: {ROUNDS} rounds of {CONNECTIONS} racing connects in {:?} (slowest round {:?})",
        started.elapsed(),
        slowest
    );
}

async fn sixteen_simultaneous_logins_leave_exactly_one_session(backend: Backend) {
    let server = TestServer::start_on(backend).await;
    let label = match backend {
        Backend::Sqlite => "sqlite",
        Backend::Postgres => "postgres",
    };
    race(&[&server], label).await;
    server.stop().await.expect("clean shutdown");
}

banter_e2e::on_both_backends!(sixteen_simultaneous_logins_leave_exactly_one_session);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_simultaneous_logins_leave_exactly_one_session_across_two_instances() {
    let first = TestServer::start_on(Backend::Postgres).await;
    let second = first.another_instance().await;
    race(&[&first, &second], "two-instances").await;
    second.stop().await.expect("clean shutdown");
    first.stop().await.expect("clean shutdown");
}
