//! The command layer driven directly: a real SQLite store in a temporary file, the sample
//! content, a fake clock, and no socket. Every command and every refusal it can give.
//!
//! Why one file over 600 lines: a list of independent tests of one module, each readable alone,
//! over one shared fixture (the store, the content and the clock).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use banter_protocol::{
    Action, ActionPayload, ActionType, ClientMessage, CloseReason, Effect, ErrorCode, Position,
    ServerMessage,
};

use super::core::{Now, SessionCore};
use crate::app::{App, SharedApp};
use crate::config::Config;
use crate::served::{ContentVersion, ServedContent};
use crate::testing::{app_on, sample_content, sample_copy};

const PIM: Position = [-640.0, 2.0, 910.0];
const INES: Position = [868.0, 22.0, 258.0];
const FENNICK: Position = [14.0, 3.0, -38.5];
const MS: Duration = Duration::from_millis(1);

/// One session of `player`, driven with a fake clock.
struct Player {
    core: SessionCore,
    now: Duration,
    next_id: u64,
}

impl Player {
    async fn new(app: &SharedApp, player: &str, session: u64) -> Player {
        let record = app.store.load_player(player).await.expect("load");
        Player {
            core: SessionCore::new(app.clone(), player.to_owned(), session, record),
            now: Duration::from_secs(10),
            next_id: 1,
        }
    }

    fn id(&mut self) -> Option<u64> {
        self.next_id += 1;
        Some(self.next_id)
    }

    async fn send(&mut self, message: ClientMessage) -> Vec<ServerMessage> {
        let now = self.at();
        self.core.handle(message, now).await
    }

    /// The player's server time, with the wall clock's milliseconds (parked windows).
    fn at(&self) -> Now {
        Now::at(self.now, crate::clock::unix_micros())
    }

    /// Sends and expects an `ack` last; returns what came before it.
    async fn ok(&mut self, message: ClientMessage) -> Vec<ServerMessage> {
        let mut answer = self.send(message).await;
        match answer.pop() {
            Some(ServerMessage::Ack { .. }) => answer,
            other => panic!("expected an ack, got {other:?} after {answer:?}"),
        }
    }

    /// Sends and expects an `error`; returns its code and message, and what came before it.
    async fn refused(&mut self, message: ClientMessage) -> (ErrorCode, String, Vec<ServerMessage>) {
        let mut answer = self.send(message).await;
        match answer.pop() {
            Some(ServerMessage::Error { code, message, .. }) => (code, message, answer),
            other => panic!("expected an error, got {other:?} after {answer:?}"),
        }
    }

    async fn code(&mut self, message: ClientMessage) -> ErrorCode {
        self.refused(message).await.0
    }

    fn after(&mut self, d: Duration) {
        self.now += d;
    }

    fn move_to(&mut self, position: Position) -> ClientMessage {
        ClientMessage::Move {
            id: self.id(),
            position,
        }
    }

    fn talk(&mut self, npc: &str) -> ClientMessage {
        ClientMessage::Talk {
            id: self.id(),
            npc: npc.to_owned(),
            instance: None,
            cached: None,
        }
    }

    fn advance(&mut self, node: &str) -> ClientMessage {
        ClientMessage::Advance {
            id: self.id(),
            node: node.to_owned(),
        }
    }

    fn choose(&mut self, response: &str) -> ClientMessage {
        ClientMessage::Choose {
            id: self.id(),
            response: response.to_owned(),
        }
    }

    fn action(&mut self, action: &Action) -> ClientMessage {
        ClientMessage::Action {
            id: self.id(),
            action: action.action_type(),
            payload: ActionPayload::build(action),
        }
    }

    fn close(&mut self) -> ClientMessage {
        ClientMessage::Close { id: self.id() }
    }

    fn resume(&mut self, token: &str) -> ClientMessage {
        ClientMessage::Resume {
            id: self.id(),
            token: token.to_owned(),
        }
    }

    fn cutscene_done(&mut self, scene: &str) -> ClientMessage {
        ClientMessage::CutsceneDone {
            id: self.id(),
            scene: scene.to_owned(),
        }
    }

    /// Places the body (first move) and talks, expecting `opened`; returns its entry node.
    async fn open(&mut self, npc: &str, at: Position) -> String {
        let spawn = self.move_to(at);
        self.ok(spawn).await;
        let talk = self.talk(npc);
        let answer = self.ok(talk).await;
        match answer.as_slice() {
            [ServerMessage::Opened { entry, .. }] => entry.clone(),
            other => panic!("expected opened, got {other:?}"),
        }
    }

    fn resume_token(&self) -> String {
        match self.core.welcome() {
            ServerMessage::Welcome { resume_token, .. } => resume_token,
            other => panic!("{other:?}"),
        }
    }
}

fn accept_pims_tale() -> Action {
    Action::AcceptQuest {
        quest_id: "PimsTideTale".into(),
    }
}

/// Pim's `AdvanceObjective`, as his tale's ending arms it.
fn hear_pims_tale() -> Action {
    Action::AdvanceObjective {
        quest_id: "PimsTideTale".into(),
        objective_id: "HearTheTale".into(),
        amount: Some(banter_protocol::ObjectiveAmount {
            amount: 1,
            island: Some("mistral_cay".into()),
        }),
    }
}

fn effects(messages: &[ServerMessage]) -> Vec<&Effect> {
    messages
        .iter()
        .filter_map(|m| match m {
            ServerMessage::Effect { effect, .. } => Some(effect),
            _ => None,
        })
        .collect()
}

/// A quest's funnel as the analytics report gives it, after a flush of every count.
async fn funnel_of(app: &SharedApp, quest: &str) -> crate::analytics::report::QuestFunnel {
    assert!(app.analytics.flush(app.store.as_ref()).await, "flushed");
    let rows = app
        .store
        .rollups(crate::analytics::QUEST, quest)
        .await
        .expect("rollups");
    crate::analytics::report::quest_funnel(
        quest,
        &rows,
        &crate::analytics::report::Selection::default(),
    )
}

async fn coins(app: &SharedApp, player: &str) -> i64 {
    app.store
        .load_player(player)
        .await
        .expect("load")
        .profile
        .coins
}

#[tokio::test]
async fn a_burst_of_small_moves_spends_one_slack_and_time_refills_it() {
    let (app, _db) = app_on("session-core", sample_content()).await;
    let mut p = Player::new(&app, "mover", 1).await;
    let spawn = p.move_to([0.0; 3]);
    p.ok(spawn).await;
    // 21 moves of 9.8 studs at the same instant: the slack (10 studs) pays for one.
    let mut accepted = 0;
    let mut x = 0.0;
    for _ in 0..21 {
        let step = p.move_to([x + 9.8, 0.0, 0.0]);
        if let [ServerMessage::Ack { .. }] = p.send(step).await.as_slice() {
            accepted += 1;
            x += 9.8;
        }
    }
    assert_eq!(accepted, 1, "one slack for the whole burst");
    let far = p.move_to([x + 9.8, 0.0, 0.0]);
    assert_eq!(p.code(far).await, ErrorCode::Teleport);
    // A second later 60 studs more are allowed, in one move.
    p.after(Duration::from_secs(1));
    let lone = p.move_to([x + 60.0, 0.0, 0.0]);
    p.ok(lone).await;
    let nan = p.move_to([f64::NAN, 0.0, 0.0]);
    assert_eq!(p.code(nan).await, ErrorCode::Malformed);
}

#[tokio::test]
async fn talk_is_refused_without_a_body_out_of_reach_for_an_unknown_npc_and_too_soon() {
    let (app, _db) = app_on("session-core", sample_content()).await;
    let mut p = Player::new(&app, "talker", 1).await;
    let talk = p.talk("Pim");
    assert_eq!(p.code(talk).await, ErrorCode::NoBody);
    let spawn = p.move_to([PIM[0] + 30.0, PIM[1], PIM[2]]);
    p.ok(spawn).await;
    let talk = p.talk("Pim");
    assert_eq!(p.code(talk).await, ErrorCode::TooFar);
    let nobody = p.talk("Nobody");
    assert_eq!(p.code(nobody).await, ErrorCode::UnknownNpc);
    p.after(Duration::from_secs(1));
    let closer = p.move_to(PIM);
    p.ok(closer).await;
    let talk = p.talk("Pim");
    p.ok(talk).await;
    let again = p.talk("Pim");
    assert_eq!(p.code(again).await, ErrorCode::ConversationOpen);
    let close = p.close();
    assert_eq!(
        p.ok(close).await,
        vec![ServerMessage::Closed {
            reason: CloseReason::Client
        }]
    );
    let too_soon = p.talk("Pim");
    assert_eq!(p.code(too_soon).await, ErrorCode::TalkCooldown);
    p.after(Duration::from_millis(1500));
    let talk = p.talk("Pim");
    p.ok(talk).await;
}

#[tokio::test]
async fn pims_tale_walked_command_by_command_pays_once() {
    let (app, _db) = app_on("session-core", sample_content()).await;
    let mut p = Player::new(&app, "listener", 1).await;
    assert_eq!(p.open("Pim", PIM).await, "PimsTideTale_Greet");
    let yes = p.choose("PimsTideTale_Greet_r1");
    p.ok(yes).await;
    let tale = p.advance("PimsTideTale_Tale");
    p.ok(tale).await;
    let accept = p.action(&accept_pims_tale());
    let answer = p.ok(accept).await;
    assert!(matches!(
        effects(&answer)[..],
        [Effect::QuestAccepted { quest, .. }] if quest == "PimsTideTale"
    ));
    let ending = p.advance("PimsTideTale_Ending");
    p.ok(ending).await;
    let objective = hear_pims_tale();
    let advance = p.action(&objective);
    assert!(matches!(
        effects(&p.ok(advance).await)[..],
        [Effect::ObjectiveAdvanced { progress: 1, .. }]
    ));
    let complete = p.advance("PimsTideTale_Complete");
    p.ok(complete).await;
    let pay = Action::CompleteQuest {
        quest_id: "PimsTideTale".into(),
    };
    let paid = p.action(&pay);
    assert!(matches!(
        effects(&p.ok(paid).await)[..],
        [Effect::QuestCompleted { .. }]
    ));
    let before = coins(&app, "listener").await;
    assert!(before > 0);
    let twice = p.action(&pay);
    assert_eq!(p.code(twice).await, ErrorCode::NotArmed);
    assert_eq!(coins(&app, "listener").await, before, "paid once");
}

#[tokio::test]
async fn every_walk_refusal_has_its_code_and_changes_nothing() {
    let (app, _db) = app_on("session-core", sample_content()).await;
    let mut p = Player::new(&app, "walker", 1).await;
    let early = p.advance("PimsTideTale_Greet");
    assert_eq!(p.code(early).await, ErrorCode::NoConversation);
    let no_close = p.close();
    assert_eq!(p.code(no_close).await, ErrorCode::NoConversation);
    p.open("Pim", PIM).await;
    let cases = [
        (p.advance("NoSuchNode"), ErrorCode::UnknownVertex),
        (p.advance("PimsTideTale_Tale"), ErrorCode::NotReachable),
        (p.advance("PimsTideTale_Greet_r1"), ErrorCode::NotALine),
        (p.choose("PimsTideTale_Greet"), ErrorCode::NotAResponse),
        (p.advance("PimsTideTale_Greet"), ErrorCode::AwaitsChoice),
        (p.action(&accept_pims_tale()), ErrorCode::NotArmed),
    ];
    for (message, code) in cases {
        assert_eq!(p.code(message).await, code);
    }
    let yes = p.choose("PimsTideTale_Greet_r1");
    p.ok(yes).await;
    let wrong_payload = ClientMessage::Action {
        id: Some(99),
        action: ActionType::AcceptQuest,
        payload: "AcceptQuest|SomeoneElsesQuest".into(),
    };
    assert_eq!(p.code(wrong_payload).await, ErrorCode::PayloadMismatch);
    // The refusals left the arming as it was.
    let accept = p.action(&accept_pims_tale());
    p.ok(accept).await;
    // Accepting twice: armed twice at most, but the quest is no longer available.
    let again = p.choose("PimsTideTale_Greet_r1");
    let _ = p.send(again).await;
    let accept = p.action(&accept_pims_tale());
    let code = p.code(accept).await;
    assert!(
        matches!(code, ErrorCode::QuestState | ErrorCode::NotArmed),
        "{code:?}"
    );
}

#[tokio::test]
async fn fetch_set_afk_and_unknown_conversations() {
    let (app, _db) = app_on("session-core", sample_content()).await;
    let mut p = Player::new(&app, "reader", 1).await;
    let fetch = ClientMessage::FetchConversation {
        id: Some(5),
        conversation: "Pim".into(),
    };
    assert!(matches!(
        p.ok(fetch).await.as_slice(),
        [ServerMessage::Conversation { conversation, .. }] if conversation == "Pim"
    ));
    let unknown = ClientMessage::FetchConversation {
        id: Some(6),
        conversation: "Nobody".into(),
    };
    assert_eq!(p.code(unknown).await, ErrorCode::UnknownConversation);
    let afk = ClientMessage::SetAfk {
        id: Some(7),
        afk: true,
    };
    assert!(p.ok(afk).await.is_empty());
    // Without an id, success is silent.
    assert!(
        p.send(ClientMessage::SetAfk {
            id: None,
            afk: false
        })
        .await
        .is_empty()
    );
    // A locale: a BCP 47 tag, or `bad_locale`; the next fetch is in it, with its own hash.
    let bad = ClientMessage::SetLocale {
        id: Some(8),
        locale: "klingon language".into(),
    };
    assert_eq!(p.code(bad).await, ErrorCode::BadLocale);
    let source_hash = match p
        .ok(ClientMessage::FetchConversation {
            id: Some(9),
            conversation: "Pim".into(),
        })
        .await
        .as_slice()
    {
        [ServerMessage::Conversation { hash, .. }] => hash.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        p.ok(ClientMessage::SetLocale {
            id: Some(10),
            locale: "ja".into(),
        })
        .await,
        vec![ServerMessage::LocaleSet {
            locale: "ja".into()
        }]
    );
    match p
        .ok(ClientMessage::FetchConversation {
            id: Some(11),
            conversation: "Pim".into(),
        })
        .await
        .as_slice()
    {
        [ServerMessage::Conversation { hash, content, .. }] => {
            assert_ne!(*hash, source_hash);
            assert!(content.contains("ヤドカリ"), "{content}");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_cutscene_quest_makes_the_player_busy_until_done_and_pays_once() {
    let (app, _db) = app_on("session-core", sample_content()).await;
    let mut p = Player::new(&app, "lamplighter", 1).await;
    let spawn = p.move_to(INES);
    p.ok(spawn).await;
    let talk = p.talk("Keeper Ines");
    let answer = p.ok(talk).await;
    assert!(matches!(
        effects(&answer)[..],
        [Effect::QuestAccepted { .. }, Effect::PlayCutscene { scene }] if scene == "LanternLighting"
    ));
    p.after(Duration::from_secs(2));
    let busy = p.talk("Keeper Ines");
    assert_eq!(p.code(busy).await, ErrorCode::Busy);
    let token = p.resume_token();
    let resume = p.resume(&token);
    assert_eq!(p.code(resume).await, ErrorCode::Busy);
    let wrong = p.cutscene_done("SomethingElse");
    assert_eq!(p.code(wrong).await, ErrorCode::NoCutscene);
    let done = p.cutscene_done("LanternLighting");
    assert!(matches!(
        effects(&p.ok(done).await)[..],
        [Effect::QuestCompleted { .. }]
    ));
    let paid = coins(&app, "lamplighter").await;
    let again = p.cutscene_done("LanternLighting");
    assert_eq!(p.code(again).await, ErrorCode::NoCutscene);
    assert_eq!(coins(&app, "lamplighter").await, paid);
    // Its funnel: talking to the giver offered and accepted it at once; the scene paid it.
    let funnel = funnel_of(&app, "LanternsOfGullRock").await;
    assert_eq!(
        (
            funnel.offered,
            funnel.accepted,
            funnel.completed,
            funnel.declined
        ),
        (1, 1, 1, 0)
    );
}

/// A cutscene quest cannot be abandoned while its scene plays, however the scene started: from
/// the talk that accepted the quest, restored in a later session, or from the giver's
/// `PlayCutscene` action in the check conversation (which once forgot the quest it names).
#[tokio::test]
async fn a_cutscene_quest_is_not_abandoned_mid_scene_however_the_scene_started() {
    let (app, _db) = app_on("session-core", sample_content()).await;
    let abandon = |p: &mut Player| ClientMessage::AbandonQuest {
        id: p.id(),
        quest: "LanternsOfGullRock".into(),
    };
    // From the talk.
    let mut first = Player::new(&app, "stubborn", 1).await;
    let spawn = first.move_to(INES);
    first.ok(spawn).await;
    let talk = first.talk("Keeper Ines");
    first.ok(talk).await;
    let give_up = abandon(&mut first);
    assert_eq!(first.code(give_up).await, ErrorCode::QuestState);
    drop(first);
    // Restored in the next session: the welcome names the scene, the player is not busy.
    let mut next = Player::new(&app, "stubborn", 2).await;
    let give_up = abandon(&mut next);
    assert_eq!(next.code(give_up).await, ErrorCode::QuestState);
    // From the giver's check conversation, whose `PlayCutscene` names the quest.
    next.after(Duration::from_secs(2));
    let entry = next.open("Keeper Ines", INES).await;
    assert_eq!(entry, "Lanterns_Check");
    let advance = next.advance("Lanterns_Check");
    next.ok(advance).await;
    let play = next.action(&Action::PlayCutscene {
        scene: "LanternLighting".into(),
        quest_id: Some("LanternsOfGullRock".into()),
    });
    next.ok(play).await;
    let give_up = abandon(&mut next);
    assert_eq!(next.code(give_up).await, ErrorCode::QuestState);
    // Once the scene is reported done, the quest may be given up again.
    let done = next.cutscene_done("LanternLighting");
    next.ok(done).await;
    let give_up = abandon(&mut next);
    next.ok(give_up).await;
    assert_eq!(app.store.ledger_count("LanternsOfGullRock").await, Ok(0));
}

#[tokio::test]
async fn resume_checks_the_world_now_and_a_refused_resume_leaves_it_parked() {
    let (app, _db) = app_on("session-core", sample_content()).await;
    let mut old = Player::new(&app, "dropper", 1).await;
    old.open("Pim", PIM).await;
    let yes = old.choose("PimsTideTale_Greet_r1");
    old.ok(yes).await;
    let token = old.resume_token();
    old.core.park(old.at()).await;

    let mut new = Player::new(&app, "dropper", 2).await;
    new.now = old.now + MS;
    let wrong = new.resume("not-the-token");
    assert_eq!(new.code(wrong).await, ErrorCode::ResumeRefused);
    // Walk 65 studs away, at the speed limit.
    for step in 1..=13 {
        new.after(Duration::from_millis(100));
        let away = new.move_to([PIM[0] + 5.0 * f64::from(step), PIM[1], PIM[2]]);
        new.ok(away).await;
    }
    let far = new.resume(&token);
    assert_eq!(new.code(far).await, ErrorCode::TooFar);
    let accept = new.action(&accept_pims_tale());
    assert_eq!(new.code(accept).await, ErrorCode::NoConversation);
    // Back within reach, still inside the window: the parked conversation is still there.
    for step in (0..13).rev() {
        new.after(Duration::from_millis(100));
        let back = new.move_to([PIM[0] + 5.0 * f64::from(step), PIM[1], PIM[2]]);
        new.ok(back).await;
    }
    let resume = new.resume(&token);
    assert!(matches!(
        new.ok(resume).await.as_slice(),
        [ServerMessage::Resumed { conversation, .. }] if conversation == "Pim"
    ));
    let open = new.resume(&token);
    assert_eq!(new.code(open).await, ErrorCode::ConversationOpen);
    // The resumed walk still has the arming it had.
    let tale = new.advance("PimsTideTale_Tale");
    new.ok(tale).await;
    let accept = new.action(&accept_pims_tale());
    new.ok(accept).await;
}

#[tokio::test]
async fn resume_without_a_body_is_no_body() {
    let (app, _db) = app_on("session-core", sample_content()).await;
    let mut p = Player::new(&app, "ghost", 1).await;
    let resume = p.resume("anything");
    assert_eq!(p.code(resume).await, ErrorCode::NoBody);
}

/// A copy of the sample content whose world puts `npc` somewhere else.
fn content_with_npc_moved(npc: &str, to: Position) -> PathBuf {
    let dir = sample_copy("session-content");
    let path = dir.join("world.json");
    let text = std::fs::read_to_string(&path).expect("world.json");
    let mut world: serde_json::Value = serde_json::from_str(&text).expect("json");
    let npcs = world["Npcs"].as_array_mut().expect("Npcs");
    for entry in npcs {
        if entry["Id"] == npc {
            entry["Position"] = serde_json::json!(to);
        }
    }
    std::fs::write(&path, serde_json::to_string_pretty(&world).expect("json")).expect("write");
    dir
}

#[tokio::test]
async fn an_action_after_a_reload_moved_the_npc_away_closes_walked_away_and_pays_nothing() {
    let moved = content_with_npc_moved("pim", [PIM[0] + 500.0, PIM[1], PIM[2]]);
    let (app, _db) = app_on("session-core", sample_content()).await;
    // Serve the sample, then reload from a folder where Pim stands 500 studs away.
    let app = {
        let library = ContentVersion::load(&sample_content(), 1).expect("loads");
        let config = Config {
            database_url: app.config.database_url.clone(),
            content: moved.clone(),
            ..Config::default()
        };
        Arc::new(App::new(
            config,
            ServedContent::new(moved.clone(), library),
            app.store.clone(),
        ))
    };
    let mut p = Player::new(&app, "stayer", 1).await;
    p.open("Pim", PIM).await;
    let yes = p.choose("PimsTideTale_Greet_r1");
    p.ok(yes).await;
    app.content
        .publish(app.content.load_next().expect("reload"));
    let accept = p.action(&accept_pims_tale());
    let (code, _, before) = p.refused(accept).await;
    assert_eq!(code, ErrorCode::TooFar);
    assert_eq!(
        before,
        vec![ServerMessage::Closed {
            reason: CloseReason::WalkedAway
        }]
    );
    let record = app.store.load_player("stayer").await.expect("load");
    assert!(record.quests.is_empty(), "nothing applied: {record:?}");
    let _ = std::fs::remove_dir_all(moved);
}

#[tokio::test]
async fn a_cutscene_that_ends_out_of_reach_closes_the_conversation_it_played_in() {
    let moved = content_with_npc_moved("ines", [INES[0] + 500.0, INES[1], INES[2]]);
    let (app, _db) = app_on("session-core", sample_content()).await;
    let app = {
        let library = ContentVersion::load(&sample_content(), 1).expect("loads");
        Arc::new(App::new(
            Config {
                database_url: app.config.database_url.clone(),
                content: moved.clone(),
                ..Config::default()
            },
            ServedContent::new(moved.clone(), library),
            app.store.clone(),
        ))
    };
    // A first session accepts the lantern quest (a cutscene quest) and drops before its end.
    let mut first = Player::new(&app, "climber", 1).await;
    let spawn = first.move_to(INES);
    first.ok(spawn).await;
    let talk = first.talk("Keeper Ines");
    first.ok(talk).await;
    // The next session talks again: the active quest opens on its check line, whose next line
    // plays the scene inside the conversation.
    let mut p = Player::new(&app, "climber", 2).await;
    p.now = first.now + Duration::from_secs(5);
    let talk = p.talk("Keeper Ines");
    let opened = p.ok(talk).await;
    assert!(
        matches!(opened.as_slice(), [ServerMessage::Opened { entry, .. }] if entry == "Lanterns_Check"),
        "{opened:?}"
    );
    let climb = p.advance("Lanterns_Check");
    p.ok(climb).await;
    let play = p.action(&Action::PlayCutscene {
        scene: "LanternLighting".into(),
        quest_id: Some("LanternsOfGullRock".into()),
    });
    p.ok(play).await;
    // An action while the scene plays: busy.
    let objective = p.action(&Action::AdvanceObjective {
        quest_id: "LanternsOfGullRock".into(),
        objective_id: "WatchTheLighting".into(),
        amount: None,
    });
    assert_eq!(p.code(objective).await, ErrorCode::Busy);
    app.content
        .publish(app.content.load_next().expect("reload"));
    let done = p.cutscene_done("LanternLighting");
    assert_eq!(
        p.ok(done).await,
        vec![ServerMessage::Closed {
            reason: CloseReason::WalkedAway
        }]
    );
    let _ = std::fs::remove_dir_all(moved);
}

#[tokio::test]
async fn a_store_failure_answers_with_a_reference_and_never_the_drivers_text() {
    let (app, _db) = app_on("session-core", sample_content()).await;
    let mut p = Player::new(&app, "unlucky", 1).await;
    p.open("Pim", PIM).await;
    let yes = p.choose("PimsTideTale_Greet_r1");
    p.ok(yes).await;
    app.store.close().await;
    let accept = p.action(&accept_pims_tale());
    let (code, message, _) = p.refused(accept).await;
    assert_eq!(code, ErrorCode::StoreUnavailable);
    assert!(message.contains("(ref "), "{message}");
    for internal in ["pool", "closed", "sqlx", "database", "sqlite"] {
        assert!(
            !message.to_lowercase().contains(internal),
            "{internal} in {message}"
        );
    }
}

/// A copy of the sample content where Pim's offer can only be taken while not Afk and the tale
/// waits for a quest check's jump instead of going on by itself.
fn content_with_pim_edited() -> PathBuf {
    let dir = sample_copy("session-content");
    let path = dir.join("dialogue/base/Pim.json");
    let text = std::fs::read_to_string(&path).expect("Pim.json");
    let mut pim: serde_json::Value = serde_json::from_str(&text).expect("json");
    pim["PimsTideTale_Greet"]["Responses"][0]["Conditions"] = serde_json::json!("!has(Afk)");
    let tale = pim["PimsTideTale_Tale"].as_object_mut().expect("the tale");
    tale.remove("NextNode");
    tale.insert(
        "Actions".into(),
        serde_json::json!([{
            "Type": "CheckQuest",
            "QuestId": "PimsTideTale",
            "SuccessNode": "PimsTideTale_Ending",
            "FailureNode": "PimsTideTale_Declined"
        }]),
    );
    std::fs::write(&path, serde_json::to_string_pretty(&pim).expect("json")).expect("write");
    dir
}

#[tokio::test]
async fn a_condition_that_stopped_holding_and_a_line_awaiting_its_jump_are_refused() {
    let edited = content_with_pim_edited();
    let (app, _db) = app_on("session-core", edited.clone()).await;
    let mut p = Player::new(&app, "edgy", 1).await;
    assert_eq!(p.open("Pim", PIM).await, "PimsTideTale_Greet");
    // The offer was shown while its condition held; going Afk makes it fail now.
    let afk = ClientMessage::SetAfk {
        id: Some(50),
        afk: true,
    };
    p.ok(afk).await;
    let yes = p.choose("PimsTideTale_Greet_r1");
    assert_eq!(p.code(yes).await, ErrorCode::ConditionFailed);
    let back = ClientMessage::SetAfk {
        id: Some(51),
        afk: false,
    };
    p.ok(back).await;
    let yes = p.choose("PimsTideTale_Greet_r1");
    p.ok(yes).await;
    // The tale carries a quest check: only the server's jump moves past it.
    let past = p.advance("PimsTideTale_Tale");
    assert_eq!(p.code(past).await, ErrorCode::AwaitsJump);
    let _ = std::fs::remove_dir_all(edited);
}

#[tokio::test]
async fn a_database_that_refuses_for_good_answers_internal_with_a_reference_only() {
    let (app, db) = app_on("session-core", sample_content()).await;
    let mut p = Player::new(&app, "unlucky-too", 1).await;
    p.open("Pim", PIM).await;
    let yes = p.choose("PimsTideTale_Greet_r1");
    p.ok(yes).await;
    // Not an outage: the table the accept writes to is gone, a failure no retry fixes.
    db.exec("ALTER TABLE quest_states RENAME TO quest_states_gone")
        .await;
    let accept = p.action(&accept_pims_tale());
    let (code, message, _) = p.refused(accept).await;
    assert_eq!(code, ErrorCode::Internal);
    assert!(message.contains("(ref "), "{message}");
    assert!(
        !message.contains("quest_states"),
        "the database's text leaked: {message}"
    );
}

#[tokio::test]
async fn completing_before_the_objective_is_quest_state_and_keeps_the_arming() {
    let (app, _db) = app_on("session-core", sample_content()).await;
    let mut p = Player::new(&app, "hasty", 1).await;
    p.open("Pim", PIM).await;
    for step in [
        p.choose("PimsTideTale_Greet_r1"),
        p.advance("PimsTideTale_Tale"),
        p.action(&accept_pims_tale()),
        p.advance("PimsTideTale_Ending"),
    ] {
        p.ok(step).await;
    }
    // The completion is armed, but the tale's objective was never sent.
    let pay = Action::CompleteQuest {
        quest_id: "PimsTideTale".into(),
    };
    let early = p.action(&pay);
    assert_eq!(p.code(early).await, ErrorCode::QuestState);
    assert_eq!(coins(&app, "hasty").await, 0, "nothing paid");
}

#[tokio::test]
async fn a_cutscene_quest_left_playing_is_picked_up_by_the_next_session_and_paid_once() {
    let (app, _db) = app_on("session-core", sample_content()).await;
    let mut first = Player::new(&app, "watcher", 1).await;
    let spawn = first.move_to(INES);
    first.ok(spawn).await;
    let talk = first.talk("Keeper Ines");
    first.ok(talk).await;
    // The session ends mid-scene (a drop, a crash, another instance: a new core either way).
    drop(first);
    let mut next = Player::new(&app, "watcher", 2).await;
    assert!(
        matches!(
            next.core.welcome(),
            ServerMessage::Welcome { cutscene: Some(scene), .. } if scene == "LanternLighting"
        ),
        "the welcome names the scene"
    );
    let done = next.cutscene_done("LanternLighting");
    let paid = next.ok(done).await;
    assert!(
        matches!(
            paid.as_slice(),
            [ServerMessage::Effect {
                effect: Effect::QuestCompleted { coins: 200, .. },
                ..
            }]
        ),
        "{paid:?}"
    );
    let again = next.cutscene_done("LanternLighting");
    assert_eq!(next.code(again).await, ErrorCode::NoCutscene);
    assert_eq!(app.store.ledger_count("LanternsOfGullRock").await, Ok(1));
    let later = Player::new(&app, "watcher", 3).await;
    assert!(
        matches!(
            later.core.welcome(),
            ServerMessage::Welcome { cutscene: None, .. }
        ),
        "paid: nothing pending"
    );
}

// ---------------------------------------------------------------------------------------------
// Server-verdict conformance vectors (`conformance/server_verdicts.json`): message sequences
// and the server's answer to each, recorded from this core. A client in any language replays
// them against a real server on the sample content (a fresh player per scenario), waiting
// `wait_ms` before each message. Re-record with
// `BANTER_BLESS=1 cargo test -p banter-server --lib server_verdict_vectors`.
// ---------------------------------------------------------------------------------------------

/// One scripted message: wait, then send.
struct Scripted {
    wait_ms: u64,
    message: ClientMessage,
}

fn step(wait_ms: u64, message: ClientMessage) -> Scripted {
    Scripted { wait_ms, message }
}

fn server_message_type(message: &ServerMessage) -> String {
    serde_json::to_value(message)
        .ok()
        .and_then(|v| v["type"].as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// Plays `script` as a fresh player; the scenario as a vector.
async fn record(
    app: &SharedApp,
    name: &str,
    player: &str,
    script: Vec<Scripted>,
) -> serde_json::Value {
    let mut p = Player::new(app, player, 1).await;
    let mut steps = Vec::new();
    for Scripted { wait_ms, message } in script {
        p.after(Duration::from_millis(wait_ms));
        let sent = serde_json::to_value(&message).expect("message");
        let id = p.id();
        let mut answer = p.send(message.with_id(id.unwrap_or(0))).await;
        let verdict = match answer.pop() {
            Some(ServerMessage::Ack { .. }) => "ok".to_owned(),
            Some(ServerMessage::Error { code, .. }) => code.name().to_owned(),
            other => panic!("{name}: expected an answer, got {other:?}"),
        };
        let before: Vec<String> = answer.iter().map(server_message_type).collect();
        steps.push(serde_json::json!({
            "wait_ms": wait_ms,
            "send": sent,
            "verdict": verdict,
            "before": before,
        }));
    }
    serde_json::json!({ "name": name, "steps": steps })
}

fn plain_move(position: Position) -> ClientMessage {
    ClientMessage::Move { id: None, position }
}

fn plain_talk(npc: &str) -> ClientMessage {
    ClientMessage::Talk {
        id: None,
        npc: npc.to_owned(),
        instance: None,
        cached: None,
    }
}

fn plain_action(action_type: ActionType, payload: &str) -> ClientMessage {
    ClientMessage::Action {
        id: None,
        action: action_type,
        payload: payload.to_owned(),
    }
}

#[tokio::test]
async fn server_verdict_vectors_are_current() {
    let (app, _db) = app_on("session-core", sample_content()).await;
    let pims_quest = vec![
        step(0, plain_move(PIM)),
        step(0, plain_talk("Pim")),
        step(
            0,
            ClientMessage::Advance {
                id: None,
                node: "PimsTideTale_Tale".into(),
            },
        ),
        step(0, plain_action(ActionType::AcceptQuest, "PimsTideTale")),
        step(
            0,
            ClientMessage::Choose {
                id: None,
                response: "PimsTideTale_Greet_r1".into(),
            },
        ),
        step(0, plain_action(ActionType::AcceptQuest, "LostReel")),
        step(0, plain_action(ActionType::AcceptQuest, "PimsTideTale")),
        step(0, plain_action(ActionType::AcceptQuest, "PimsTideTale")),
        step(
            0,
            ClientMessage::Advance {
                id: None,
                node: "PimsTideTale_Tale".into(),
            },
        ),
        step(
            0,
            plain_action(
                ActionType::AdvanceObjective,
                "PimsTideTale|HearTheTale|1|mistral_cay",
            ),
        ),
        step(
            0,
            ClientMessage::Advance {
                id: None,
                node: "PimsTideTale_Ending".into(),
            },
        ),
        step(0, plain_action(ActionType::CompleteQuest, "PimsTideTale")),
        step(0, plain_action(ActionType::CompleteQuest, "PimsTideTale")),
        step(0, ClientMessage::Close { id: None }),
        step(0, ClientMessage::Close { id: None }),
    ];
    let world_rules = vec![
        step(0, plain_talk("Pim")),
        step(0, plain_move(PIM)),
        step(0, plain_move(INES)),
        step(0, plain_talk("Nobody")),
        step(0, plain_talk("Keeper Ines")),
        step(0, plain_talk("Pim")),
        step(0, plain_talk("Pim")),
        step(0, ClientMessage::Close { id: None }),
        step(0, plain_talk("Pim")),
        step(1600, plain_talk("Pim")),
        step(
            0,
            ClientMessage::Choose {
                id: None,
                response: "Pim_Nowhere_r1".into(),
            },
        ),
        step(0, plain_action(ActionType::CheckQuest, "Nothing|A|B")),
        step(0, ClientMessage::Close { id: None }),
        step(
            0,
            ClientMessage::Resume {
                id: None,
                token: "not-a-token".into(),
            },
        ),
    ];
    let small_messages = vec![
        step(
            0,
            ClientMessage::SetAfk {
                id: None,
                afk: true,
            },
        ),
        step(
            0,
            ClientMessage::SetLocale {
                id: None,
                locale: "ja".into(),
            },
        ),
        step(
            0,
            ClientMessage::SetLocale {
                id: None,
                locale: "not a tag".into(),
            },
        ),
        step(
            0,
            ClientMessage::FetchConversation {
                id: None,
                conversation: "Pim".into(),
            },
        ),
        step(
            0,
            ClientMessage::FetchConversation {
                id: None,
                conversation: "Nobody".into(),
            },
        ),
        step(
            0,
            ClientMessage::CutsceneDone {
                id: None,
                scene: "NoSuchScene".into(),
            },
        ),
        step(0, ClientMessage::Close { id: None }),
    ];
    let advance = |node: &str| ClientMessage::Advance {
        id: None,
        node: node.to_owned(),
    };
    let choose = |response: &str| ClientMessage::Choose {
        id: None,
        response: response.to_owned(),
    };
    let abandon = |quest: &str| ClientMessage::AbandonQuest {
        id: None,
        quest: quest.to_owned(),
    };
    let quest_log = vec![
        step(0, plain_move(PIM)),
        step(0, abandon("PimsTideTale")),
        step(0, plain_talk("Pim")),
        step(0, advance("PimsTideTale_Greet_r1")),
        step(0, choose("PimsTideTale_Greet")),
        step(0, advance("PimsTideTale_Greet")),
        step(0, choose("PimsTideTale_Greet_r1")),
        step(0, advance("PimsTideTale_Tale")),
        step(0, plain_action(ActionType::AcceptQuest, "PimsTideTale")),
        step(0, abandon("PimsTideTale")),
        step(0, abandon("PimsTideTale")),
        step(0, advance("PimsTideTale_Ending")),
        step(
            0,
            plain_action(
                ActionType::AdvanceObjective,
                "PimsTideTale|HearTheTale|1|mistral_cay",
            ),
        ),
        step(0, ClientMessage::Close { id: None }),
        step(1600, plain_talk("Pim")),
        step(0, choose("PimsTideTale_Greet_r1")),
        step(0, advance("PimsTideTale_Tale")),
        step(0, plain_action(ActionType::AcceptQuest, "PimsTideTale")),
    ];
    // Every input a client walk refuses, and the ones it accepts off screen, as the server
    // answers them (conformance/client_walk.json gives the client's side of the same rules).
    let walk_answers = vec![
        step(0, plain_move(FENNICK)),
        step(0, plain_talk("Grandpa Fennick")),
        step(0, advance("CopperSnappers_Accepted")),
        step(0, choose("CopperSnappers_Greet_r99")),
        step(0, choose("CopperSnappers_Greet_r2")),
        step(0, advance("CopperSnappers_Declined")),
        // Fennick_Hello is on screen; its first response shows the greeting again.
        step(0, choose("Fennick_Hello_r1")),
        step(0, choose("CopperSnappers_Greet_r1")),
        // The held AcceptQuest, sent early: the quest is active from here on.
        step(0, plain_action(ActionType::AcceptQuest, "CopperSnappers")),
        // In R, but its condition (the quest available) no longer holds.
        step(0, choose("Fennick_Hello_r1")),
        // A line shown earlier, advanced again: Fennick_Hello is shown again.
        step(0, advance("CopperSnappers_Declined")),
        step(0, advance("Fennick_Hello")),
        // A response shown earlier, not on screen, picked again.
        step(0, choose("CopperSnappers_Greet_r2")),
        step(0, advance("CopperSnappers_Declined")),
        step(0, ClientMessage::Close { id: None }),
        step(0, advance("CopperSnappers_Declined")),
        step(1600, plain_talk("Grandpa Fennick")),
        step(0, choose("CopperSnappers_Check_r1")),
        // Until the check's jump, every step is refused, even what is in R.
        step(0, advance("CopperSnappers_Check")),
        step(0, choose("CopperSnappers_Check_r2")),
        step(0, choose("CopperSnappers_Check_r1")),
        step(
            0,
            plain_action(
                ActionType::CheckQuest,
                "CopperSnappers|CopperSnappers_Complete|CopperSnappers_NotYet",
            ),
        ),
        step(0, advance("CopperSnappers_NotYet")),
        step(0, choose("CopperSnappers_NotYet_r2")),
        step(0, choose("CopperSnappers_Check_r2")),
        step(0, advance("CopperSnappers_Patience")),
        step(0, ClientMessage::Close { id: None }),
        step(0, choose("CopperSnappers_Check_r2")),
    ];
    let scenarios = serde_json::Value::Array(vec![
        record(
            &app,
            "Pim's quest, with refusals on the way",
            "conformance-pim",
            pims_quest,
        )
        .await,
        record(&app, "the world's rules", "conformance-world", world_rules).await,
        record(
            &app,
            "the small messages",
            "conformance-small",
            small_messages,
        )
        .await,
        record(
            &app,
            "a quest abandoned from the log and taken again",
            "conformance-quest-log",
            quest_log,
        )
        .await,
        record(
            &app,
            "the client walk's refusals and what it accepts off screen, answered by the server",
            "conformance-walk",
            walk_answers,
        )
        .await,
    ]);
    let verdicts: Vec<&str> = scenarios
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|s| s["steps"].as_array().into_iter().flatten())
        .filter_map(|s| s["verdict"].as_str())
        .collect();
    for code in [
        "ok",
        "not_reachable",
        "not_armed",
        "payload_mismatch",
        "no_conversation",
        "no_body",
        "too_far",
        "unknown_npc",
        "conversation_open",
        "talk_cooldown",
        "bad_locale",
        "unknown_conversation",
        "no_cutscene",
        "teleport",
        "resume_refused",
        "not_a_line",
        "not_a_response",
        "awaits_choice",
        "awaits_jump",
        "condition_failed",
        "unknown_vertex",
        "quest_state",
    ] {
        assert!(
            verdicts.contains(&code),
            "no step answers {code}: {verdicts:?}"
        );
    }
    let path = sample_content().join("../conformance/server_verdicts.json");
    let text = format!(
        "{}\n",
        serde_json::to_string_pretty(&scenarios).expect("json")
    );
    if std::env::var_os("BANTER_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().expect("folder")).expect("conformance folder");
        std::fs::write(&path, &text).expect("write");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == text,
        "{} is out of date: BANTER_BLESS=1 cargo test -p banter-server --lib server_verdict_vectors",
        path.display()
    );
}

/// Narrative analytics from three players of Pim's greeting: one takes the quest to its end,
/// one declines and closes, one drops with the offer on screen. What the report says is what
/// they did, to the line and the response, with times from the fake clock.
#[tokio::test]
async fn what_players_did_in_a_conversation_becomes_its_report() {
    use crate::analytics::{AnalyticsQuery, Answer};
    let (app, _db) = app_on("session-core", sample_content()).await;

    let mut listener = Player::new(&app, "listener", 1).await;
    assert_eq!(listener.open("Pim", PIM).await, "PimsTideTale_Greet");
    listener.after(Duration::from_secs(2));
    let yes = listener.choose("PimsTideTale_Greet_r1");
    listener.ok(yes).await;
    listener.after(Duration::from_secs(3));
    for message in [
        listener.advance("PimsTideTale_Tale"),
        listener.action(&accept_pims_tale()),
        listener.advance("PimsTideTale_Ending"),
        listener.action(&Action::AdvanceObjective {
            quest_id: "PimsTideTale".into(),
            objective_id: "HearTheTale".into(),
            amount: Some(banter_protocol::ObjectiveAmount {
                amount: 1,
                island: Some("mistral_cay".into()),
            }),
        }),
        listener.advance("PimsTideTale_Complete"),
        listener.action(&Action::CompleteQuest {
            quest_id: "PimsTideTale".into(),
        }),
    ] {
        listener.ok(message).await;
    }
    // Past the final line: the walk has ended, so the close is a completion.
    let past_the_end = listener.advance("PimsTideTale_Complete");
    listener.ok(past_the_end).await;
    let close = listener.close();
    listener.ok(close).await;

    let mut decliner = Player::new(&app, "decliner", 2).await;
    decliner.open("Pim", PIM).await;
    decliner.after(Duration::from_secs(1));
    let no = decliner.choose("PimsTideTale_Greet_r2");
    decliner.ok(no).await;
    let close = decliner.close();
    decliner.ok(close).await;

    let mut dropper = Player::new(&app, "dropper", 3).await;
    dropper.open("Pim", PIM).await;
    drop(dropper);

    assert!(app.analytics.flush(app.store.as_ref()).await, "flushed");
    let library = app.content.current();
    let query = AnalyticsQuery {
        conversation: Some("Pim".into()),
        ..AnalyticsQuery::default()
    };
    let Answer::Conversation(report) =
        crate::analytics::answer(app.store.as_ref(), Some(&library), &query)
            .await
            .expect("answered")
    else {
        panic!("a conversation's report")
    };
    assert_eq!(report.opens, 3);
    assert_eq!(
        report.version.as_deref(),
        Some(library.conversations["Pim"].hash.as_str())
    );
    assert_eq!(report.entries.len(), 1);
    assert_eq!(report.entries[0].name, "PimsTideTale_Greet");
    let line = |name: &str| {
        report
            .lines
            .iter()
            .find(|l| l.line == name)
            .unwrap_or_else(|| panic!("no line {name} in {:?}", report.lines))
            .clone()
    };
    let greet = line("PimsTideTale_Greet");
    assert_eq!((greet.visits, greet.timed), (3, 3));
    // 2 s, 1 s and 0 s (the dropper sent nothing after the talk): the median is 1 s within
    // the buckets' 12%.
    let median = greet.median_ms.expect("timed");
    assert!((880..=1_120).contains(&median), "median {median} ms");
    assert_eq!(line("PimsTideTale_Tale").visits, 1);
    assert_eq!(line("PimsTideTale_Declined").visits, 1);
    let split = &report.choices[0];
    assert_eq!(
        (split.line.as_str(), split.chosen),
        ("PimsTideTale_Greet", 2)
    );
    let shares: Vec<(&str, u64, f64)> = split
        .responses
        .iter()
        .map(|r| (r.response.as_str(), r.count, r.share))
        .collect();
    assert_eq!(
        shares,
        [
            ("PimsTideTale_Greet_r1", 1, 0.5),
            ("PimsTideTale_Greet_r2", 1, 0.5)
        ]
    );
    let mut endings: Vec<(&str, Option<&str>, u64)> = report
        .endings
        .iter()
        .map(|e| (e.how.as_str(), e.line.as_deref(), e.count))
        .collect();
    endings.sort();
    assert_eq!(
        endings,
        [
            ("closed", Some("PimsTideTale_Declined"), 1),
            ("completed", Some("PimsTideTale_Complete"), 1),
            ("disconnected", Some("PimsTideTale_Greet"), 1),
        ]
    );
    let [funnel] = &report.quests[..] else {
        panic!("one quest offered: {:?}", report.quests)
    };
    assert_eq!(funnel.quest, "PimsTideTale");
    assert_eq!(
        (
            funnel.offered,
            funnel.declined,
            funnel.accepted,
            funnel.completed
        ),
        (3, 2, 1, 1)
    );
    assert_eq!(funnel.objectives.len(), 1);
    assert_eq!(
        (
            funnel.objectives[0].name.as_str(),
            funnel.objectives[0].count
        ),
        ("HearTheTale", 1)
    );
    assert_eq!(funnel.drop_off[0].lost, 2, "offered -> accepted");
    // Counts only: no player's name is anywhere in the answer.
    let json = serde_json::to_string(&report).expect("json");
    for player in ["listener", "decliner", "dropper"] {
        assert!(!json.contains(player), "{player} in {json}");
    }
}

/// The quest log's abandon: an active quest is forgotten with its progress and untracked, its
/// giver offers it again, its funnel counts it; anything not active is `quest_state`, with
/// nothing changed.
#[tokio::test]
async fn an_abandoned_quest_is_forgotten_offered_again_and_counted() {
    let (app, _db) = app_on("session-core", sample_content()).await;
    let mut p = Player::new(&app, "quitter", 1).await;
    let abandon = |p: &mut Player, quest: &str| ClientMessage::AbandonQuest {
        id: p.id(),
        quest: quest.to_owned(),
    };
    let never = abandon(&mut p, "PimsTideTale");
    assert_eq!(p.code(never).await, ErrorCode::QuestState);
    let unknown = abandon(&mut p, "NoSuchQuest");
    assert_eq!(p.code(unknown).await, ErrorCode::QuestState);

    p.open("Pim", PIM).await;
    for message in [
        p.choose("PimsTideTale_Greet_r1"),
        p.advance("PimsTideTale_Tale"),
        p.action(&accept_pims_tale()),
        p.advance("PimsTideTale_Ending"),
    ] {
        p.ok(message).await;
    }
    // Abandoned with its conversation still open: the armed objective is refused afterwards.
    let give_up = abandon(&mut p, "PimsTideTale");
    match p.ok(give_up).await.as_slice() {
        [ServerMessage::QuestAbandoned { quest, profile }] => {
            assert_eq!(quest, "PimsTideTale");
            assert_eq!(profile.tracked_quest, None);
        }
        other => panic!("expected quest_abandoned, got {other:?}"),
    }
    let record = app.store.load_player("quitter").await.expect("load");
    assert!(!record.quests.contains_key("PimsTideTale"), "forgotten");
    let objective = hear_pims_tale();
    let late = p.action(&objective);
    assert_eq!(p.code(late).await, ErrorCode::QuestState);
    let twice = abandon(&mut p, "PimsTideTale");
    assert_eq!(p.code(twice).await, ErrorCode::QuestState);
    let close = p.close();
    p.ok(close).await;
    // Pim offers it again.
    p.after(Duration::from_secs(2));
    let talk = p.talk("Pim");
    assert!(matches!(
        p.ok(talk).await.as_slice(),
        [ServerMessage::Opened { entry, .. }] if entry == "PimsTideTale_Greet"
    ));
    // The funnel: offered and accepted once, abandoned once, nothing in progress.
    let close = p.close();
    p.ok(close).await;
    let funnel = funnel_of(&app, "PimsTideTale").await;
    assert_eq!(
        (
            funnel.offered,
            funnel.accepted,
            funnel.abandoned,
            funnel.completed,
            funnel.in_progress
        ),
        (2, 1, 1, 0, 0)
    );
    // The step is in the audit log, written with the change.
    let audit = app
        .store
        .audit_for_player("quitter", 100)
        .await
        .expect("audit");
    assert!(audit.iter().any(|e| e.record.message == "abandon_quest"
        && e.record.detail.as_deref() == Some("PimsTideTale")
        && e.record.code.is_none()
        && e.step_key.is_some()));
}

/// `set_locale` says which locale the text is served in now: the one asked for, a fallback the
/// content has, or the source language.
#[tokio::test]
async fn set_locale_answers_the_locale_served() {
    let (app, _db) = app_on("session-core", sample_content()).await;
    let mut p = Player::new(&app, "reader", 1).await;
    for (asked, served) in [
        ("ja-JP", "ja"),
        ("pt-BR", "en"),
        ("en-XA", "en-XA"),
        ("ar", "ar"),
    ] {
        let set = ClientMessage::SetLocale {
            id: p.id(),
            locale: asked.to_owned(),
        };
        assert_eq!(
            p.ok(set).await,
            vec![ServerMessage::LocaleSet {
                locale: served.to_owned()
            }],
            "{asked}"
        );
    }
}

#[tokio::test]
async fn visits_are_stored_before_closed_goes_out_and_a_new_session_reads_them() {
    let (app, _db) = app_on("session-core", sample_content()).await;
    let opens_in = |answer: &[ServerMessage]| match answer {
        [ServerMessage::Opened { facts, .. }] => facts.opens,
        other => panic!("expected opened, got {other:?}"),
    };
    let mut first = Player::new(&app, "regular", 1).await;
    let entry = first.open("Grandpa Fennick", FENNICK).await;
    let close = first.close();
    first.ok(close).await;
    // `closed` is out: the counts are already in the store, for any instance to read.
    let stored = app.store.load_player("regular").await.expect("load");
    let fennick = &stored.visits["Fennick"];
    assert_eq!(fennick.opens, 1);
    assert_eq!(fennick.nodes[&entry].count, 1, "{fennick:?}");

    // The same session reads its own count at once.
    first.after(Duration::from_secs(5));
    let talk = first.talk("Grandpa Fennick");
    assert_eq!(opens_in(&first.ok(talk).await), 1);
    // The connection ends with the conversation open: `end` stores it too.
    first.core.end().await;
    drop(first);

    // A new session (a restart, another instance: a core loaded from the store).
    // Its clock is later than the first session's last talk (the cooldown is the player's).
    let mut next = Player::new(&app, "regular", 2).await;
    next.after(Duration::from_secs(60));
    let spawn = next.move_to(FENNICK);
    next.ok(spawn).await;
    let talk = next.talk("Grandpa Fennick");
    assert_eq!(opens_in(&next.ok(talk).await), 2);
    let stored = app.store.load_player("regular").await.expect("load");
    assert_eq!(stored.visits["Fennick"].nodes[&entry].count, 2);
}
