//! Every way into a conversation or an action checks the world at that moment: the body is
//! present, within the NPC's reach, and free (not in a cutscene). One test per path: resuming a
//! conversation after walking away, resuming where the body is unknown, resuming during a
//! cutscene, an armed action after a reload moved the NPC away, and a cutscene ending into a
//! conversation whose NPC a reload moved away. (Opening a conversation out of reach is in
//! `world_checks.rs`.) A refusal changes nothing and pays nothing.
//!
//! Walking is honest: real time passes between steps, under the speed limit.

use std::path::Path;
use std::time::Duration;

use banter_e2e::{
    Backend, Client, ExpectRefused, LANTERN_SCENE, LANTERNS_QUEST, PIMS_QUEST, Reply, TestServer,
    content_copy,
};
use banter_protocol::{
    ActionType, CloseReason, Effect, ErrorCode, Position, QuestStatus, ServerMessage,
};

/// Pim stands at (-640, 2, 915) with the default range of 8: the reach is 8 + 5 = 13.
const PIM: Position = [-640.0, 2.0, 915.0];
const NEAR_PIM: Position = [-640.0, 2.0, 910.0];
/// 65 studs from Pim.
const AWAY_FROM_PIM: Position = [-640.0, 2.0, 850.0];
/// Keeper Ines stands at (870, 22, 260).
const INES: Position = [870.0, 22.0, 260.0];
const NEAR_INES: Position = [870.0, 22.0, 255.0];
/// Oswin Reedle stands at (905, 30, 310), about 62 studs from Ines.
const NEAR_OSWIN: Position = [905.0, 30.0, 305.0];

/// An honest walk: a step of 5 studs, then 100 ms before the next (50 studs/s against the
/// limit of 60).
const STEP: f64 = 5.0;
const STEP_EVERY: Duration = Duration::from_millis(100);

fn resumed(reply: &Reply, conversation: &str) -> bool {
    reply.resumed().is_some_and(|(c, _)| c == conversation)
}

fn distance(a: Position, b: Position) -> f64 {
    ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2) + (a[2] - b[2]).powi(2)).sqrt()
}

/// Walks from `from` to `to` in a straight line at 50 studs/s: [`STEP`] studs at a time, with
/// [`STEP_EVERY`] of real time before each step (the server measures the time, so the spacing
/// is what makes the walk honest). Every step must be accepted; what the server said on the way.
async fn walk(client: &mut Client, from: Position, to: Position) -> Vec<ServerMessage> {
    let steps = (distance(from, to) / STEP).ceil().max(1.0) as u32;
    let mut seen = Vec::new();
    for k in 1..=steps {
        tokio::time::sleep(STEP_EVERY).await;
        let t = f64::from(k) / f64::from(steps);
        let at = [
            from[0] + (to[0] - from[0]) * t,
            from[1] + (to[1] - from[1]) * t,
            from[2] + (to[2] - from[2]) * t,
        ];
        let reply = client
            .move_to(at)
            .await
            .unwrap_or_else(|e| panic!("an honest step to {at:?} was refused: {e:?}"));
        seen.extend(reply.messages);
    }
    seen
}

/// In Pim's conversation, through the tale to its last line: `CompleteQuest` (30 coins) is armed,
/// not yet sent. The quest is accepted and its objective done; nothing is paid yet.
async fn to_pims_payout(client: &mut Client) {
    assert_eq!(
        client.talk("Pim").await.expect("talk").entry,
        "PimsTideTale_Greet"
    );
    client.hear_pims_tale().await;
}

/// One number from the test's database.
async fn count(server: &TestServer, sql: &str) -> i64 {
    server.database().scalar(sql).await
}

/// Rows of the player's reward ledger for `quest`: what was paid.
async fn paid(server: &TestServer, player: &str, quest: &str) -> i64 {
    count(
        server,
        &format!(
            "SELECT COUNT(*) FROM reward_ledger WHERE player_id = '{player}' AND quest_id = '{quest}'"
        ),
    )
    .await
}

async fn coins(server: &TestServer, player: &str) -> i64 {
    count(
        server,
        &format!("SELECT coins FROM profiles WHERE player_id = '{player}'"),
    )
    .await
}

/// Moves the NPC standing at `from` to `to` in the copy's world.json (the file is edited as text,
/// so the rest of it stays byte for byte).
fn move_npc(content: &Path, from: Position, to: Position) {
    let path = content.join("world.json");
    let text = std::fs::read_to_string(&path).expect("read world.json");
    let was = format!(
        "\"Position\": [{:.1}, {:.1}, {:.1}]",
        from[0], from[1], from[2]
    );
    let now = format!("\"Position\": [{:.1}, {:.1}, {:.1}]", to[0], to[1], to[2]);
    assert_eq!(
        text.matches(&was).count(),
        1,
        "`{was}` once in {}",
        path.display()
    );
    std::fs::write(&path, text.replacen(&was, &now, 1)).expect("write world.json");
}

/// Reloads the content through the admin endpoint, as an operator does.
async fn reload(server: &TestServer) {
    let (status, body) = server.reload_content().await;
    assert_eq!(status, 200, "reload: {body}");
}

async fn server_on(content: &Path) -> TestServer {
    TestServer::start_serving(content, |c| c.world.talk_cooldown = Duration::ZERO).await
}

// ---------------------------------------------------------------------------------------------
// Resuming a conversation.
// ---------------------------------------------------------------------------------------------

/// The cheat from issue 16: drop mid-conversation, walk 65 studs away, resume, and have
/// `CompleteQuest` accepted and paid out of range.
#[tokio::test]
async fn resuming_after_walking_away_is_too_far_and_the_conversation_stays_parked() {
    let server = TestServer::start().await;
    let (token, player) = server.login_player("device-reach-resume").await;
    let (mut client, welcome) = server.connect_welcomed(&token).await;
    client.move_to(NEAR_PIM).await.expect("spawned");
    to_pims_payout(&mut client).await;
    // The connection drops: no Close frame, the conversation is parked.
    client.abort();

    let (mut client, again) = server.connect_welcomed(&token).await;
    assert_eq!(again.position, Some(NEAR_PIM), "the body is remembered");
    walk(&mut client, NEAR_PIM, AWAY_FROM_PIM).await;
    assert!(distance(AWAY_FROM_PIM, PIM) > 13.0 + 50.0);

    client
        .resume(&welcome.resume_token)
        .await
        .expect_refused_alone(ErrorCode::TooFar);
    // Nothing was opened: the armed payout is not accepted, and nothing was paid.
    client
        .action(ActionType::CompleteQuest, PIMS_QUEST)
        .await
        .expect_refused_alone(ErrorCode::NoConversation);
    assert_eq!(paid(&server, &player, PIMS_QUEST).await, 0);
    assert_eq!(coins(&server, &player).await, 0);

    // The refused resume changed nothing: back in reach, within the window, it resumes, the
    // payout still armed.
    walk(&mut client, AWAY_FROM_PIM, NEAR_PIM).await;
    let reply = client
        .resume(&welcome.resume_token)
        .await
        .expect("resumed in reach");
    assert!(resumed(&reply, "Pim"), "{:?}", reply.messages);
    let payout = client
        .action(ActionType::CompleteQuest, PIMS_QUEST)
        .await
        .expect("still armed, and now in reach");
    assert_eq!(payout.profile().expect("a profile").coins, 30);
    assert_eq!(paid(&server, &player, PIMS_QUEST).await, 1);
    server.stop().await.expect("clean shutdown");
}

/// The body is remembered per instance: on the instance where the conversation was parked the
/// body is always known (a player cannot talk without one), so the reconnect that has no body is
/// one to another instance on the same PostgreSQL. There `resume` is refused with `no_body` (the
/// `welcome` had no `position`) and opens nothing; once the body is placed, it resumes there
/// (parked conversations live in the store), and only there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resuming_with_no_body_is_no_body_and_opens_nothing() {
    let first = TestServer::start_on(Backend::Postgres).await;
    let second = first.another_instance().await;
    let (token, player) = first.login_player("device-reach-nobody").await;
    let (mut client, welcome) = first.connect_welcomed(&token).await;
    let resume_token = welcome.resume_token;
    client.move_to(NEAR_PIM).await.expect("spawned");
    client.talk("Pim").await.expect("talk");
    client.choose("PimsTideTale_Greet_r1").await.expect("yes");
    client.abort();

    let (mut elsewhere, welcome) = second.connect_welcomed(&token).await;
    assert_eq!(
        welcome.position, None,
        "the second instance never saw the body"
    );
    elsewhere
        .resume(&resume_token)
        .await
        .expect_refused_alone(ErrorCode::NoBody);
    elsewhere
        .action(ActionType::AcceptQuest, PIMS_QUEST)
        .await
        .expect_refused(ErrorCode::NoConversation);
    assert_eq!(
        count(
            &first,
            &format!("SELECT COUNT(*) FROM quest_states WHERE player_id = '{player}'"),
        )
        .await,
        0
    );
    elsewhere.move_to(NEAR_PIM).await.expect("spawned here");
    // Parked conversations live in the store: with the body placed, this instance resumes it,
    // armings and all.
    let reply = elsewhere
        .resume(&resume_token)
        .await
        .expect("resumed on the second instance");
    assert!(resumed(&reply, "Pim"), "{:?}", reply.messages);
    elsewhere
        .action(ActionType::AcceptQuest, PIMS_QUEST)
        .await
        .expect("still armed");
    // Taken once: the first instance has nothing left to resume under that token.
    let (mut client, welcome) = first.connect_welcomed(&token).await;
    assert_eq!(welcome.position, Some(NEAR_PIM));
    client
        .resume(&resume_token)
        .await
        .expect_refused(ErrorCode::ResumeRefused);
    drop(client);
    second.stop().await.expect("clean shutdown");
    first.stop().await.expect("clean shutdown");
}

#[tokio::test]
async fn resuming_during_a_cutscene_is_busy_and_the_conversation_stays_parked() {
    let server = TestServer::start_with(|c| c.world.talk_cooldown = Duration::ZERO).await;
    let token = server.login("device-reach-busy").await;
    let (mut client, welcome) = server.connect_welcomed(&token).await;
    client.move_to(NEAR_OSWIN).await.expect("spawned");
    client.talk("Oswin Reedle").await.expect("talk to Oswin");
    client.abort();

    // The new session starts Ines's lantern cutscene, then walks back into Oswin's reach.
    let mut client = server.connect(&token).await;
    walk(&mut client, NEAR_OSWIN, NEAR_INES).await;
    client.start_the_lantern_cutscene().await;
    walk(&mut client, NEAR_INES, NEAR_OSWIN).await;

    client
        .resume(&welcome.resume_token)
        .await
        .expect_refused_alone(ErrorCode::Busy);

    // Once the scene is done, the same token resumes: the refusal changed nothing.
    client
        .cutscene_done(LANTERN_SCENE)
        .await
        .expect("the scene ends");
    let reply = client
        .resume(&welcome.resume_token)
        .await
        .expect("resumed when free");
    assert!(resumed(&reply, "Oswin"), "{:?}", reply.messages);
    server.stop().await.expect("clean shutdown");
}

// ---------------------------------------------------------------------------------------------
// A reload that moves the NPC.
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn an_armed_action_after_a_reload_moved_the_npc_away_is_too_far_and_pays_nothing() {
    let content = content_copy("reach");
    let server = server_on(&content).await;
    let (token, player) = server.login_player("device-reach-reload").await;
    let mut client = server.connect(&token).await;
    client.move_to(NEAR_PIM).await.expect("spawned");
    to_pims_payout(&mut client).await;

    // The operator moves Pim 500 studs away and reloads; the player has not moved.
    let far = [PIM[0], PIM[1], PIM[2] + 500.0];
    move_npc(&content, PIM, far);
    reload(&server).await;

    // The armed payout: the conversation closes as walked away, then the action's own error
    // (`request` matches the error to the action's id).
    let refused = client
        .action(ActionType::CompleteQuest, PIMS_QUEST)
        .await
        .expect_refused(ErrorCode::TooFar);
    assert_eq!(
        refused.before,
        vec![ServerMessage::Closed {
            reason: CloseReason::WalkedAway
        }]
    );
    assert_eq!(paid(&server, &player, PIMS_QUEST).await, 0);
    assert_eq!(coins(&server, &player).await, 0);
    client
        .close_conversation()
        .await
        .expect_refused(ErrorCode::NoConversation);

    // Pim comes back: the quest is still active and unpaid, as the facts say.
    move_npc(&content, far, PIM);
    reload(&server).await;
    let opened = client.talk("Pim").await.expect("talk again");
    opened.assert_pims_quest_state("PimsTideTale_Check", QuestStatus::Active, (0, 0));
    server.stop().await.expect("clean shutdown");
}

/// Ines's `Lanterns_Climb` line plays the lantern cutscene from inside her conversation, which
/// stays open while it plays. The player reaches it with the lantern quest accepted and not yet
/// done: the first talk accepts it and starts the scene (no conversation), the connection drops
/// before the scene is reported done, and the next talk opens on `Lanterns_Check`.
#[tokio::test]
async fn a_cutscene_ending_after_a_reload_moved_the_npc_away_closes_the_conversation() {
    let content = content_copy("reach");
    let server = server_on(&content).await;
    let (token, player) = server.login_player("device-reach-cutscene").await;
    let mut client = server.connect(&token).await;
    client.move_to(NEAR_INES).await.expect("spawned");
    client.start_the_lantern_cutscene().await;
    client.abort();

    let mut client = server.connect(&token).await;
    let opened = client.talk("Keeper Ines").await.expect("talk again");
    assert_eq!(opened.entry, "Lanterns_Check");
    client
        .advance("Lanterns_Check")
        .await
        .expect("on to the climb");
    let scene = client
        .action(
            ActionType::PlayCutscene,
            &format!("{LANTERN_SCENE}|{LANTERNS_QUEST}"),
        )
        .await
        .expect("the scene plays");
    assert!(
        matches!(
            scene.effects().as_slice(),
            [Effect::PlayCutscene { scene, .. }] if scene == LANTERN_SCENE
        ),
        "{:?}",
        scene.messages
    );

    // While it plays, the operator moves Ines 500 studs away and reloads.
    let far = [INES[0], INES[1], INES[2] + 500.0];
    move_npc(&content, INES, far);
    reload(&server).await;

    let done = client
        .cutscene_done(LANTERN_SCENE)
        .await
        .expect("the scene ends");
    assert!(
        done.messages.contains(&ServerMessage::Closed {
            reason: CloseReason::WalkedAway
        }),
        "the scene ended into a conversation with Ines 500 studs away, and it stayed open: {:?}",
        done.messages
    );
    // The scene is over and so is the conversation; the lantern quest is neither advanced nor
    // paid.
    client
        .cutscene_done(LANTERN_SCENE)
        .await
        .expect_refused(ErrorCode::NoCutscene);
    client
        .close_conversation()
        .await
        .expect_refused(ErrorCode::NoConversation);
    client
        .action(ActionType::CompleteQuest, LANTERNS_QUEST)
        .await
        .expect_refused(ErrorCode::NoConversation);
    assert_eq!(paid(&server, &player, LANTERNS_QUEST).await, 0);
    assert_eq!(coins(&server, &player).await, 0);
    server.stop().await.expect("clean shutdown");
}
