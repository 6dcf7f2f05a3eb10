//! Resume: a client whose connection drops mid-conversation reconnects and takes the same
//! conversation back with the resume token of the dropped session's `welcome`: the same lines
//! shown, the same actions armed. A foreign or stale token changes nothing; after the grace
//! window, or once another conversation opened, the parked one is gone.

use std::time::Duration;

use banter_e2e::{Client, ExpectRefused, TestServer};
use banter_protocol::{ActionType, ErrorCode};

const NEAR_PIM: [f64; 3] = [-640.0, 2.0, 910.0];

/// The reply says Pim's conversation was taken back.
fn assert_resumed_pim(reply: &banter_e2e::Reply) {
    assert_eq!(
        reply.resumed().map(|(conversation, _)| conversation),
        Some("Pim"),
        "{:?}",
        reply.messages
    );
}

/// A resume with `resume_token` is refused, with nothing sent before the error.
async fn assert_nothing_to_resume(client: &mut Client, resume_token: &str) {
    client
        .resume(resume_token)
        .await
        .expect_refused_alone(ErrorCode::ResumeRefused);
}

/// With the conversation resumed: its armed `AcceptQuest` runs once, then is spent.
async fn assert_accept_still_armed_once(client: &mut Client) {
    client
        .action(ActionType::AcceptQuest, "PimsTideTale")
        .await
        .expect("still armed");
    client
        .action(ActionType::AcceptQuest, "PimsTideTale")
        .await
        .expect_refused(ErrorCode::NotArmed);
}

/// A player in Pim's greeting who said yes: AcceptQuest is armed, not yet sent.
async fn mid_conversation(server: &TestServer, device: &str) -> (Client, String, String) {
    let token = server.login(device).await;
    let (mut client, welcome) = server.connect_welcomed(&token).await;
    client.move_to(NEAR_PIM).await.expect("spawned");
    assert_eq!(
        client.talk("Pim").await.expect("talk").entry,
        "PimsTideTale_Greet"
    );
    client.choose("PimsTideTale_Greet_r1").await.expect("yes");
    (client, token, welcome.resume_token)
}

#[tokio::test]
async fn a_dropped_connection_resumes_the_same_walk_with_its_armings() {
    let server = TestServer::start().await;
    let (client, token, resume_token) = mid_conversation(&server, "device-resume-01").await;
    // The connection drops (no goodbye from the client's side of the protocol).
    drop(client);

    let mut client = server.connect(&token).await;
    let reply = client.resume(&resume_token).await.expect("resumed");
    assert_resumed_pim(&reply);
    // The armed AcceptQuest is still armed, once; the walk goes on from where it was.
    assert_accept_still_armed_once(&mut client).await;
    client
        .advance("PimsTideTale_Tale")
        .await
        .expect("the walk goes on");
    // The token took it back once: a second resume finds nothing.
    client.close_conversation().await.expect("closed");
    assert_nothing_to_resume(&mut client, &resume_token).await;
    server.stop().await.expect("clean shutdown");
}

#[tokio::test]
async fn a_reconnect_that_replaces_a_live_session_resumes_its_conversation() {
    let server = TestServer::start().await;
    let (mut old, token, resume_token) = mid_conversation(&server, "device-resume-02").await;
    // The old connection is still open as far as the server knows; the new one replaces it.
    let mut client = server.connect(&token).await;
    client.resume(&resume_token).await.expect("resumed");
    client
        .action(ActionType::AcceptQuest, "PimsTideTale")
        .await
        .expect("still armed");
    let _ = old.until_eof().await;
    server.stop().await.expect("clean shutdown");
}

#[tokio::test]
async fn a_foreign_or_stale_token_is_refused_and_changes_nothing() {
    let server = TestServer::start().await;
    let (first, _, first_resume) = mid_conversation(&server, "device-resume-03").await;
    drop(first);

    // Another player holds the first one's token: refused, and their own session is untouched.
    let other = server.login("device-resume-04").await;
    let mut stranger = server.connect(&other).await;
    stranger.move_to(NEAR_PIM).await.expect("spawned");
    for foreign_or_stale in [first_resume.as_str(), "made-up-token"] {
        assert_nothing_to_resume(&mut stranger, foreign_or_stale).await;
    }
    let opened = stranger
        .talk("Pim")
        .await
        .expect("a fresh conversation of their own");
    assert_eq!(opened.entry, "PimsTideTale_Greet");
    assert_eq!(opened.facts.coins, 0);
    server.stop().await.expect("clean shutdown");
}

#[tokio::test]
async fn after_the_window_or_a_new_conversation_there_is_nothing_to_resume() {
    // A zero window: the conversation is closed the moment the connection drops.
    let server = TestServer::start_with(|c| {
        c.limits.resume_window = Duration::ZERO;
        c.world.talk_cooldown = Duration::ZERO;
    })
    .await;
    let (client, token, resume_token) = mid_conversation(&server, "device-resume-05").await;
    drop(client);
    let mut client = server.connect(&token).await;
    assert_nothing_to_resume(&mut client, &resume_token).await;
    // Talking works as usual: the expired conversation left nothing open.
    client.move_to(NEAR_PIM).await.expect("moved");
    client.talk("Pim").await.expect("talk");
    server.stop().await.expect("clean shutdown");

    // With a window: opening another conversation first discards the parked one.
    let server = TestServer::start_with(|c| c.world.talk_cooldown = Duration::ZERO).await;
    let (client, token, resume_token) = mid_conversation(&server, "device-resume-06").await;
    drop(client);
    let mut client = server.connect(&token).await;
    client.move_to(NEAR_PIM).await.expect("moved");
    client.talk("Pim").await.expect("a new conversation");
    client.close_conversation().await.expect("closed");
    assert_nothing_to_resume(&mut client, &resume_token).await;
    server.stop().await.expect("clean shutdown");
}

/// Behind a load balancer without sticky sessions: the player drops off the first instance and
/// lands on the second, which takes the conversation back from the store (the first instance
/// parks it when the second claims the player). Exactly once: the first instance then has
/// nothing to resume under that token, and a token of another player changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversation_parked_on_one_instance_resumes_on_another_once() {
    let first = TestServer::start_on(banter_e2e::Backend::Postgres).await;
    let second = first.another_instance().await;
    let (client, token, resume_token) = mid_conversation(&first, "device-resume-lb").await;
    let (stranger, _, stranger_token) = mid_conversation(&first, "device-resume-lb-2").await;
    client.abort();
    stranger.abort();

    let mut client = second.connect(&token).await;
    client.move_to(NEAR_PIM).await.expect("spawned here");
    assert_nothing_to_resume(&mut client, &stranger_token).await;
    let reply = client
        .resume(&resume_token)
        .await
        .expect("resumed on the second instance");
    assert_resumed_pim(&reply);
    // Still armed on the other instance, once.
    assert_accept_still_armed_once(&mut client).await;
    drop(client);

    // Taken on the second instance already.
    let mut back = first.connect(&token).await;
    back.move_to(NEAR_PIM).await.expect("spawned");
    assert_nothing_to_resume(&mut back, &resume_token).await;
    drop(back);
    second.stop().await.expect("clean shutdown");
    first.stop().await.expect("clean shutdown");
}

/// A restart (or a crash) of the only instance: the conversation parked before it is in the
/// store, and the restarted server resumes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversation_parked_before_a_restart_resumes_after_it() {
    let server = TestServer::start().await;
    let (client, token, resume_token) = mid_conversation(&server, "device-resume-restart").await;
    client.abort();
    // The session notices the drop and parks; the restart waits for it to end.
    let server = server.restart().await;
    let mut client = server.connect(&token).await;
    client.move_to(NEAR_PIM).await.expect("spawned");
    client
        .resume(&resume_token)
        .await
        .expect("resumed after the restart");
    client
        .action(ActionType::AcceptQuest, "PimsTideTale")
        .await
        .expect("still armed");
    drop(client);
    server.stop().await.expect("clean shutdown");
}
