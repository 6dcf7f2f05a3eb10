//! Scale-out: two server processes on one PostgreSQL, sharing nothing but the database. A player
//! who connects to the second while connected to the first is taken over: the newer session's
//! claim reaches the first instance through LISTEN/NOTIFY and the older session is told `bye`
//! `replaced` and closed. The database coordinates; the instances never talk to each other.
//!
//! (A SQLite file serves one instance: there is nothing to coordinate across processes.)

use std::time::{Duration, Instant};

use banter_e2e::{Backend, Client, TestServer};
use banter_protocol::ByeReason;

/// Pim stands at (-640, 2, 915).
const NEAR_PIM: [f64; 3] = [-640.0, 2.0, 910.0];

/// Reads the older session to its end: it must have been told it was replaced.
async fn assert_replaced(client: &mut Client) -> Duration {
    let started = Instant::now();
    client.until_bye(ByeReason::Replaced).await;
    started.elapsed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newer_session_on_another_instance_takes_the_player_over() {
    let first = TestServer::start_on_with(Backend::Postgres, |c| {
        c.world.talk_cooldown = Duration::ZERO
    })
    .await;
    let second = first.another_instance().await;
    let (token, _) = first.login_player("device-scale-01").await;

    let mut on_first = first.connect(&token).await;
    on_first.move_to(NEAR_PIM).await.expect("spawned");
    on_first
        .talk("Pim")
        .await
        .expect("a conversation on the first instance");

    // The player connects to the second instance: the first closes its session.
    let mut on_second = second.connect(&token).await;
    let took = assert_replaced(&mut on_first).await;
    eprintln!("takeover across instances: {took:?} after the welcome on the second");
    assert_eq!(first.metric("banter_sessions_taken_over_total").await, 1.0);
    assert_eq!(first.metric("banter_open_sessions").await, 0.0);
    on_second.move_to(NEAR_PIM).await.expect("spawned");
    assert_eq!(
        on_second
            .talk("Pim")
            .await
            .expect("talks on the second")
            .entry,
        "PimsTideTale_Greet"
    );

    // And back: connecting to the first again takes the player from the second.
    let mut again = first.connect(&token).await;
    assert_replaced(&mut on_second).await;
    assert_eq!(second.metric("banter_sessions_taken_over_total").await, 1.0);
    again.move_to(NEAR_PIM).await.expect("spawned");
    again.talk("Pim").await.expect("talks on the first again");

    second.stop().await.expect("clean shutdown");
    first.stop().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn players_spread_over_two_instances_keep_their_own_sessions() {
    let first = TestServer::start_on(Backend::Postgres).await;
    let second = first.another_instance().await;
    let mut clients = Vec::new();
    for n in 0..8 {
        let server = if n % 2 == 0 { &first } else { &second };
        let token = server.login(&format!("device-spread-{n:04}")).await;
        let mut client = server.connect(&token).await;
        client.move_to(NEAR_PIM).await.expect("spawned");
        clients.push(client);
    }
    // Every one still answers: no claim of one player touched another's session.
    for client in &mut clients {
        client.move_to(NEAR_PIM).await.expect("still connected");
    }
    assert_eq!(first.metric("banter_sessions_taken_over_total").await, 0.0);
    assert_eq!(second.metric("banter_sessions_taken_over_total").await, 0.0);
    assert_eq!(first.metric("banter_open_sessions").await, 4.0);
    assert_eq!(second.metric("banter_open_sessions").await, 4.0);
    second.stop().await.expect("clean shutdown");
    first.stop().await.expect("clean shutdown");
}
