//! The examples in docs/PROTOCOL.md, recorded from a real server so they cannot go stale, and
//! the protocol decisions the page states that only a whole server can show: the tracked quest
//! after its completion, and a cutscene quest after a dropped connection and a restart.
//!
//! Every frame the client sends (`>>`) and receives (`<<`) is recorded; the values that differ
//! per run (the token, its expiry, the resume token) are replaced by fixed stand-ins; and each
//! recorded block must equal the block between `<!-- recorded: NAME begin -->` and
//! `<!-- recorded: NAME end -->` in docs/PROTOCOL.md.
//! `BANTER_BLESS=1 cargo test -p banter-e2e --test protocol_examples` rewrites the blocks.
//!
//! Why one file over 600 lines: one test per recorded example; the recorder, the stand-ins and
//! the comparison with the page are shared by all of them and by nothing else.

use std::path::{Path, PathBuf};
use std::time::Duration;

use banter_dialogue::{ClientWalk, DialogueGraph, Outgoing, Screen, build_conversation};
use banter_e2e::{Client, TestServer, talk_message};
use banter_protocol::{ClientMessage, Effect, ErrorCode, FactSheet, ServerMessage};
use tokio_tungstenite::tungstenite::Message;

/// 5 studs from Pim, who stands at (-640, 2, 915).
const PIM: [f64; 3] = [-640.0, 2.0, 910.0];
/// 5 studs from Keeper Ines, at (870, 22, 260).
const NEAR_INES: [f64; 3] = [870.0, 22.0, 255.0];
/// 5 studs from Grandpa Fennick, at (14, 3, -42.5).
const NEAR_FENNICK: [f64; 3] = [14.0, 3.0, -37.5];
/// 5 studs from Marisol, at (-6, 3, -18).
const NEAR_MARISOL: [f64; 3] = [-6.0, 3.0, -13.0];

/// Fixed stand-ins for what differs per run.
const TOKEN: &str = "eyJ0eXAiOiJKV1QiLCJhbGciOiJIUzI1NiJ9.<claims>.<signature>";
const EXPIRES_AT: u64 = 1_795_967_232;
const RESUME_TOKEN: &str = "v3W9mQ0kX1tY7bN2cR5dLs8h";
/// What an `opened.content` string is shown as (it is shown decoded in a block of its own).
const CONTENT: &str = "\"…\"";

/// One recorded block of the page: its name, its fence's language and its lines.
struct Block {
    name: String,
    fence: &'static str,
    body: String,
}

impl Block {
    fn frames(name: &str, lines: Vec<String>) -> Block {
        Block {
            name: name.to_owned(),
            fence: "text",
            body: lines.join("\n"),
        }
    }
}

/// A client that records every frame, with per-run values replaced.
struct Recorder {
    client: Client,
    next_id: u64,
    /// Per-run strings and their fixed stand-ins.
    replace: Vec<(String, String)>,
    lines: Vec<String>,
    /// The last `opened` content, decoded and pretty-printed.
    content: Option<String>,
    /// The last `opened` with content, with the content shortened.
    opened: Option<String>,
    welcome: String,
}

/// Logs a device in; its token, its player id and the recorded exchange.
async fn login(server: &TestServer, device: &str) -> (String, String, Vec<String>) {
    let body = format!(r#"{{"device_id":"{device}"}}"#);
    let (status, answer) = server
        .http(
            "POST",
            "/v1/auth/device",
            &[("Content-Type", "application/json")],
            &body,
        )
        .await;
    assert_eq!(status, 200, "login: {answer}");
    let value: serde_json::Value = serde_json::from_str(&answer).expect("json");
    let token = value["token"].as_str().expect("a token").to_owned();
    let player = value["player"].as_str().expect("a player").to_owned();
    let expires = value["expires_at"].as_u64().expect("an expiry");
    let shown = answer.replace(&token, TOKEN).replace(
        &format!("\"expires_at\":{expires}"),
        &format!("\"expires_at\":{EXPIRES_AT}"),
    );
    let lines = vec![
        format!("POST /v1/auth/device {body}"),
        format!("  → {status} {shown}"),
    ];
    (token, player, lines)
}

impl Recorder {
    /// Upgrades with the token in the `Authorization` header and reads the welcome.
    async fn connect(server: &TestServer, token: &str) -> Recorder {
        let client = server.connect_with_bearer(token).await.expect("upgraded");
        let mut recorder = Recorder {
            client,
            next_id: 0,
            replace: vec![(token.to_owned(), TOKEN.to_owned())],
            lines: vec![format!(
                "GET /v1/ws  Authorization: Bearer {TOKEN}  → 101 Switching Protocols"
            )],
            content: None,
            opened: None,
            welcome: String::new(),
        };
        let (text, welcome) = recorder.next_message().await;
        let ServerMessage::Welcome { resume_token, .. } = welcome else {
            panic!("expected welcome, got {text}");
        };
        recorder
            .replace
            .push((resume_token, RESUME_TOKEN.to_owned()));
        let shown = recorder.normalize(&text, None);
        recorder.welcome = shown.clone();
        recorder.lines.push(String::new());
        recorder.lines.push(format!("<< {shown}"));
        recorder
    }

    /// The next protocol message, raw and decoded; pings and pongs are skipped.
    async fn next_message(&mut self) -> (String, ServerMessage) {
        loop {
            match self.client.next_frame().await {
                Some(Message::Text(text)) => {
                    let message = serde_json::from_str(text.as_str()).expect("a server message");
                    return (text.as_str().to_owned(), message);
                }
                Some(Message::Ping(_) | Message::Pong(_)) => continue,
                other => panic!("expected a message, got {other:?}"),
            }
        }
    }

    fn normalize(&self, text: &str, content: Option<&str>) -> String {
        let mut shown = text.to_owned();
        if let Some(content) = content {
            let quoted = serde_json::to_string(content).expect("a string");
            shown = shown.replace(&quoted, CONTENT);
        }
        for (from, to) in &self.replace {
            shown = shown.replace(from, to);
        }
        shown
    }

    /// Sends `message` with the next id and records everything up to its ack or error; every
    /// message received, the final one included.
    async fn request(&mut self, message: ClientMessage) -> Vec<ServerMessage> {
        self.next_id += 1;
        let id = self.next_id;
        let text = serde_json::to_string(&message.with_id(id)).expect("encodes");
        self.lines.push(format!(">> {text}"));
        self.client.send_text(&text).await;
        let mut received = Vec::new();
        loop {
            let (text, message) = self.next_message().await;
            let content = match &message {
                ServerMessage::Opened {
                    content: Some(content),
                    ..
                } => {
                    let value: serde_json::Value =
                        serde_json::from_str(content).expect("content is JSON");
                    self.content = Some(serde_json::to_string_pretty(&value).expect("pretty"));
                    let quoted = serde_json::to_string(content).expect("a string");
                    let short = serde_json::to_string(&shortened(content)).expect("a string");
                    self.opened = Some(self.normalize(&text.replace(&quoted, &short), None));
                    Some(content.as_str())
                }
                _ => None,
            };
            let shown = self.normalize(&text, content);
            self.lines.push(format!("<< {shown}"));
            let last = matches!(
                &message,
                ServerMessage::Ack { id: acked } if *acked == id
            ) || matches!(
                &message,
                ServerMessage::Error { id: Some(failed), .. } if *failed == id
            );
            received.push(message);
            if last {
                return received;
            }
        }
    }

    /// The lines recorded since the last call.
    fn take(&mut self) -> Vec<String> {
        std::mem::take(&mut self.lines)
    }

    /// Moves the body; every message received.
    async fn move_to(&mut self, position: [f64; 3]) -> Vec<ServerMessage> {
        self.request(ClientMessage::Move { id: None, position })
            .await
    }

    /// Talks to `npc` (no hint, nothing cached) whatever that opens; every message received.
    async fn talk_reply(&mut self, npc: &str) -> Vec<ServerMessage> {
        self.request(talk_message(npc, None, None)).await
    }

    /// Reports the lantern cutscene done; every message received.
    async fn lantern_cutscene_done(&mut self) -> Vec<ServerMessage> {
        self.request(ClientMessage::CutsceneDone {
            id: None,
            scene: "LanternLighting".into(),
        })
        .await
    }

    /// Closes the open conversation; every message received.
    async fn close_conversation(&mut self) -> Vec<ServerMessage> {
        self.request(ClientMessage::Close { id: None }).await
    }

    /// Talks to `npc`; the graph built from the content, the entry and the facts.
    async fn talk(
        &mut self,
        npc: &str,
        instance: Option<&str>,
        cached: Option<(&str, &DialogueGraph)>,
    ) -> (DialogueGraph, String, String, FactSheet) {
        let received = self
            .request(talk_message(npc, instance, cached.map(|(hash, _)| hash)))
            .await;
        let opened = received.into_iter().find_map(|m| match m {
            ServerMessage::Opened {
                conversation,
                entry,
                hash,
                content,
                facts,
                ..
            } => Some((conversation, entry, hash, content, facts)),
            _ => None,
        });
        let (name, entry, hash, content, facts) = opened.expect("opened");
        let graph = match (content, cached) {
            (Some(content), _) => {
                let (graph, diagnostics) = build_conversation(&name, &content);
                assert!(diagnostics.iter().all(|d| !d.is_error()), "{diagnostics:?}");
                graph
            }
            (None, Some((_, graph))) => graph.clone(),
            (None, None) => panic!("no content and nothing cached"),
        };
        (graph, entry, hash, facts)
    }

    /// Sends what the client walk queued, in order; every message received. A refusal fails
    /// the test.
    async fn send_queued(
        &mut self,
        graph: &DialogueGraph,
        out: &mut Vec<Outgoing>,
    ) -> Vec<ServerMessage> {
        let mut received = Vec::new();
        for message in out.drain(..) {
            let wire = message.message(graph).expect("a step of this graph");
            let replies = self.request(wire.clone()).await;
            assert!(
                !replies
                    .iter()
                    .any(|m| matches!(m, ServerMessage::Error { .. })),
                "{wire:?} refused: {replies:?}"
            );
            received.extend(replies);
        }
        received
    }

    /// Walks the conversation just opened on `entry` to its end with the client rules, one
    /// [`Recorder::step`] at a time; every message received.
    async fn walk_to_the_end(
        &mut self,
        graph: &DialogueGraph,
        entry: &str,
        facts: &FactSheet,
    ) -> Vec<ServerMessage> {
        let mut out = Vec::new();
        let first = graph.find(entry).expect("the entry is in the graph");
        let mut walk = ClientWalk::open(graph, first, facts, &mut out).expect("opens");
        assert!(out.is_empty(), "the entry line has no node actions");
        let mut seen = Vec::new();
        while walk.screen() != Screen::Ended {
            seen.extend(self.step(graph, &mut walk, facts).await);
        }
        seen
    }

    /// One step of the client rules: advances past the line on screen or picks the first
    /// response offered, sends what follows, and follows the server's jumps. The walk closes
    /// the conversation once it has ended. Every message received.
    async fn step(
        &mut self,
        graph: &DialogueGraph,
        walk: &mut ClientWalk,
        facts: &FactSheet,
    ) -> Vec<ServerMessage> {
        let mut out = Vec::new();
        if walk.can_advance(graph, facts) {
            walk.advance_current(graph, facts, &mut out)
                .expect("advance");
        } else {
            let choice = walk
                .choices(graph, facts)
                .next()
                .expect("a response to pick");
            walk.choose(graph, choice, facts, &mut out).expect("choose");
        }
        let mut received = Vec::new();
        while !out.is_empty() {
            let replies = self.send_queued(graph, &mut out).await;
            for message in &replies {
                if let ServerMessage::Jump { node } = message {
                    let to = graph.find(node).expect("the jump target is in the graph");
                    walk.jump(graph, to, facts, &mut out).expect("jump");
                }
            }
            received.extend(replies);
        }
        received
    }
}

/// The start of a content string, cut after a comma, for an example that shows its form.
fn shortened(content: &str) -> String {
    let cut = content
        .char_indices()
        .take_while(|(i, _)| *i < 100)
        .filter(|(_, c)| *c == ',')
        .last()
        .map_or(0, |(i, _)| i);
    format!("{} ...}}", &content[..=cut])
}

fn effects(messages: &[ServerMessage]) -> Vec<Effect> {
    messages
        .iter()
        .filter_map(|m| match m {
            ServerMessage::Effect { effect, .. } => Some(effect.clone()),
            _ => None,
        })
        .collect()
}

/// What the end of the lantern cutscene does: `LanternsOfGullRock` is paid.
fn the_lantern_quest_paid() -> Vec<Effect> {
    vec![Effect::QuestCompleted {
        quest: "LanternsOfGullRock".into(),
        coins: 200,
        experience: 80,
    }]
}

fn tracked(messages: &[ServerMessage]) -> Option<String> {
    messages
        .iter()
        .rev()
        .find_map(|m| match m {
            ServerMessage::Effect { profile, .. } => Some(profile.tracked_quest.clone()),
            _ => None,
        })
        .expect("an effect with a profile")
}

/// Section 5's `welcome` and section 8.4: a fresh player hears Pim's tale and is paid, the
/// same flow as tests/tests/conversation.rs, with the client rules of section 8.3.
async fn record_pim(server: &TestServer, blocks: &mut Vec<Block>) {
    let (token, _, mut lines) = login(server, "device-pim-0001").await;
    let mut pim = Recorder::connect(server, &token).await;
    lines.extend(pim.take());
    blocks.push(Block::frames("pim-login", lines));
    blocks.push(Block {
        name: "welcome".into(),
        fence: "json",
        body: pim.welcome.clone(),
    });

    pim.move_to(PIM).await;
    blocks.push(Block::frames("pim-spawn", pim.take()));

    let (graph, entry, _, facts) = pim.talk("Pim", None, None).await;
    assert_eq!(
        entry, "PimsTideTale_Greet",
        "the resolver offers Pim's quest"
    );
    blocks.push(Block::frames("pim-talk", pim.take()));
    blocks.push(Block {
        name: "opened".into(),
        fence: "json",
        body: pim.opened.take().expect("content sent"),
    });
    blocks.push(Block {
        name: "pim-content".into(),
        fence: "json",
        body: pim.content.take().expect("content sent"),
    });

    let mut out = Vec::new();
    let first = graph.find(&entry).expect("the entry is in the graph");
    let mut walk = ClientWalk::open(&graph, first, &facts, &mut out).expect("opens");
    assert!(out.is_empty(), "the greeting has no node actions");

    let chose = pim.step(&graph, &mut walk, &facts).await;
    assert!(effects(&chose).is_empty(), "the AcceptQuest is held");
    blocks.push(Block::frames("pim-choose", pim.take()));

    let mut seen = Vec::new();
    let mut step = 0;
    while walk.screen() != Screen::Ended {
        step += 1;
        seen.extend(pim.step(&graph, &mut walk, &facts).await);
        blocks.push(Block::frames(&format!("pim-advance-{step}"), pim.take()));
    }
    assert_eq!(step, 3, "the tale, the ending, the completion");
    assert_eq!(
        effects(&seen),
        vec![
            Effect::QuestAccepted {
                quest: "PimsTideTale".into(),
                objectives: vec!["HearTheTale".into()],
            },
            Effect::ObjectiveAdvanced {
                quest: "PimsTideTale".into(),
                objective: "HearTheTale".into(),
                progress: 1,
                target: 1,
            },
            Effect::QuestCompleted {
                quest: "PimsTideTale".into(),
                coins: 30,
                experience: 20,
            },
        ]
    );
    assert!(matches!(seen.last(), Some(ServerMessage::Ack { .. })));
}

/// The `talk` and `cutscene_done` sections: Keeper Ines's cutscene quest.
async fn record_ines(server: &TestServer, blocks: &mut Vec<Block>) {
    let (token, _, _) = login(server, "device-ines-0001").await;
    let mut ines = Recorder::connect(server, &token).await;
    ines.move_to(NEAR_INES).await;
    ines.take();
    let talked = ines.talk_reply("Keeper Ines").await;
    assert!(
        !talked
            .iter()
            .any(|m| matches!(m, ServerMessage::Opened { .. }))
    );
    blocks.push(Block::frames("ines-talk", ines.take()));
    let done = ines.lantern_cutscene_done().await;
    assert_eq!(effects(&done), the_lantern_quest_paid());
    blocks.push(Block::frames("ines-cutscene-done", ines.take()));
}

/// Section 8.5: a quest check that fails. The player accepted (and tracks) CopperSnappers and
/// talks to Fennick again, with the content cached from the first conversation.
async fn record_fennick(server: &TestServer, blocks: &mut Vec<Block>) {
    let (token, _, _) = login(server, "device-fennick-0001").await;
    let mut fennick = Recorder::connect(server, &token).await;
    fennick.move_to(NEAR_FENNICK).await;
    let (graph, entry, hash, facts) = fennick.talk("Grandpa Fennick", Some("fennick"), None).await;
    assert_eq!(entry, "CopperSnappers_Greet");
    let seen = fennick.walk_to_the_end(&graph, &entry, &facts).await;
    assert_eq!(tracked(&seen).as_deref(), Some("CopperSnappers"));
    fennick.take();

    let (graph, entry, _, facts) = fennick
        .talk("Grandpa Fennick", Some("fennick"), Some((&hash, &graph)))
        .await;
    assert_eq!(entry, "CopperSnappers_Check");
    let seen = fennick.walk_to_the_end(&graph, &entry, &facts).await;
    assert!(
        seen.iter()
            .any(|m| matches!(m, ServerMessage::Jump { node } if node == "CopperSnappers_NotYet"))
    );
    blocks.push(Block::frames("fennick-check", fennick.take()));

    // The quest log's abandon (section 4, `abandon_quest`): CopperSnappers is active and tracked.
    fennick.close_conversation().await;
    fennick.take();
    let abandoned = fennick
        .request(ClientMessage::AbandonQuest {
            id: None,
            quest: "CopperSnappers".into(),
        })
        .await;
    assert!(
        matches!(
            abandoned.as_slice(),
            [ServerMessage::QuestAbandoned { quest, profile }, ServerMessage::Ack { .. }]
                if quest == "CopperSnappers" && profile.tracked_quest.is_none()
        ),
        "{abandoned:?}"
    );
    blocks.push(Block::frames("fennick-abandon", fennick.take()));
    let (_, entry, _, _) = fennick
        .talk("Grandpa Fennick", Some("fennick"), Some((&hash, &graph)))
        .await;
    assert_eq!(entry, "CopperSnappers_Greet", "offered again");
    fennick.close_conversation().await;
    fennick.take();

    // `set_locale` (section 4): a tag the content lacks falls back to the source language.
    for locale in ["pt-BR", "ja-JP"] {
        fennick
            .request(ClientMessage::SetLocale {
                id: None,
                locale: locale.into(),
            })
            .await;
    }
    blocks.push(Block::frames("set-locale", fennick.take()));
}

/// Section 8.2: a response whose `NextNode` is a list (a branch). A fresh player has 0 coins,
/// has not completed CopperSnappers and is not `PostReveal`: the next line is the list's last,
/// `Marisol_Regular`; an earlier one was never shown.
async fn record_marisol(server: &TestServer, blocks: &mut Vec<Block>) {
    let (token, _, _) = login(server, "device-marisol-0001").await;
    let mut marisol = Recorder::connect(server, &token).await;
    marisol.move_to(NEAR_MARISOL).await;
    marisol.take();
    let (_, entry, _, _) = marisol.talk("Marisol", None, None).await;
    assert_eq!(entry, "Marisol_Hello");
    marisol
        .request(ClientMessage::Choose {
            id: None,
            response: "Marisol_Hello_r3".into(),
        })
        .await;
    let skipped = marisol
        .request(ClientMessage::Advance {
            id: None,
            node: "Marisol_Premium".into(),
        })
        .await;
    assert!(
        matches!(
            skipped.as_slice(),
            [ServerMessage::Error {
                code: ErrorCode::NotReachable,
                ..
            }]
        ),
        "{skipped:?}"
    );
    let shown = marisol
        .request(ClientMessage::Advance {
            id: None,
            node: "Marisol_Regular".into(),
        })
        .await;
    assert!(matches!(shown.as_slice(), [ServerMessage::Ack { .. }]));
    marisol.close_conversation().await;
    blocks.push(Block::frames("marisol-branch", marisol.take()));
}

/// Section 2: the worked example of a token minted with the development secret, by the
/// server's own code (the Python recipe on the page must print the same).
fn record_dev_token(blocks: &mut Vec<Block>) {
    use banter_server::auth::TokenKey;
    use banter_server::config::DEV_SECRET;
    let key = TokenKey::new(DEV_SECRET);
    let token = key.mint("tester-01", 1_800_000_000, 3600);
    let claims = key
        .verify(&token, 1_800_000_000)
        .expect("the token verifies");
    assert_eq!(claims.sub, "tester-01");
    blocks.push(Block::frames("dev-token", vec![token]));
}

fn protocol_doc() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/PROTOCOL.md")
}

fn begin(name: &str) -> String {
    format!("<!-- recorded: {name} begin -->")
}

fn end(name: &str) -> String {
    format!("<!-- recorded: {name} end -->")
}

/// The page with every block replaced by its recording; the names of the blocks that differ.
fn rewrite(page: &str, blocks: &[Block]) -> (String, Vec<String>) {
    let mut page = page.to_owned();
    let mut stale = Vec::new();
    for block in blocks {
        let (begin, end) = (begin(&block.name), end(&block.name));
        let start = page
            .find(&begin)
            .unwrap_or_else(|| panic!("docs/PROTOCOL.md has no `{begin}`"))
            + begin.len();
        let stop = start
            + page[start..]
                .find(&end)
                .unwrap_or_else(|| panic!("docs/PROTOCOL.md has no `{end}` after its begin"));
        let fresh = format!("\n```{}\n{}\n```\n", block.fence, block.body);
        if page[start..stop] != fresh {
            let old: Vec<&str> = page[start..stop].lines().collect();
            let line = fresh
                .lines()
                .zip(old.iter().chain(std::iter::repeat(&"")))
                .position(|(a, b)| a != *b)
                .unwrap_or(old.len());
            stale.push(format!(
                "`{}`, from its line {line}:\n  page:     {}\n  recorded: {}",
                block.name,
                old.get(line).unwrap_or(&"(end)"),
                fresh.lines().nth(line).unwrap_or("(end)")
            ));
            page.replace_range(start..stop, &fresh);
        }
    }
    (page, stale)
}

/// The examples of docs/PROTOCOL.md are what a real server sends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_protocol_examples_are_a_recorded_session() {
    let server = TestServer::start_with(|c| c.world.talk_cooldown = Duration::ZERO).await;
    let mut blocks = Vec::new();
    record_pim(&server, &mut blocks).await;
    record_ines(&server, &mut blocks).await;
    record_fennick(&server, &mut blocks).await;
    record_marisol(&server, &mut blocks).await;
    record_dev_token(&mut blocks);
    server.stop().await.expect("clean shutdown");

    let path = protocol_doc();
    let page = std::fs::read_to_string(&path).expect("docs/PROTOCOL.md");
    assert_eq!(
        page.matches("<!-- recorded: ").count(),
        2 * blocks.len(),
        "docs/PROTOCOL.md has recorded blocks this test does not record"
    );
    let (fresh, stale) = rewrite(&page, &blocks);
    if std::env::var_os("BANTER_BLESS").is_some() {
        if fresh != page {
            std::fs::write(&path, fresh).expect("write docs/PROTOCOL.md");
        }
        return;
    }
    assert!(
        stale.is_empty(),
        "docs/PROTOCOL.md is out of date with the server; regenerate with \
         `BANTER_BLESS=1 cargo test -p banter-e2e --test protocol_examples`:\n{}",
        stale.join("\n")
    );
}

/// Decided (docs/PROTOCOL.md, Profile): `tracked_quest` stays set after the tracked quest is
/// completed, until a `TrackQuest` names another quest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tracked_quest_stays_set_after_it_completes_until_another_is_tracked() {
    let server = TestServer::start_with(|c| c.world.talk_cooldown = Duration::ZERO).await;
    let (token, player, _) = login(&server, "device-tracked-0001").await;
    let mut client = Recorder::connect(&server, &token).await;
    client.move_to(NEAR_FENNICK).await;

    // Accept and track CopperSnappers.
    let (graph, entry, _, facts) = client.talk("Grandpa Fennick", None, None).await;
    assert_eq!(entry, "CopperSnappers_Greet");
    let seen = client.walk_to_the_end(&graph, &entry, &facts).await;
    assert!(
        effects(&seen).contains(&Effect::QuestTracked {
            quest: "CopperSnappers".into()
        }),
        "{seen:?}"
    );
    assert_eq!(tracked(&seen).as_deref(), Some("CopperSnappers"));

    // Three snappers from the game server, then hand them in.
    let event = serde_json::json!({
        "event_id": "tracked-catch-1",
        "player": player,
        "kind": "fish_caught",
        "species": "Copper Snapper",
        "island": "brinehollow",
        "amount": 3,
    });
    let (status, body) = server.post_event(&event.to_string()).await;
    assert_eq!(status, 200, "{body}");
    let (graph, entry, _, facts) = client.talk("Grandpa Fennick", None, None).await;
    assert_eq!(entry, "CopperSnappers_Check");
    let seen = client.walk_to_the_end(&graph, &entry, &facts).await;
    assert!(
        effects(&seen).contains(&Effect::QuestCompleted {
            quest: "CopperSnappers".into(),
            coins: 120,
            experience: 40
        }),
        "{seen:?}"
    );
    assert_eq!(
        tracked(&seen).as_deref(),
        Some("CopperSnappers"),
        "the completion's profile still tracks the quest"
    );

    // Still tracked in the next session's welcome; Fennick offers his next quest.
    drop(client);
    let mut client = Recorder::connect(&server, &token).await;
    assert!(
        client
            .welcome
            .contains(r#""tracked_quest":"CopperSnappers""#),
        "{}",
        client.welcome
    );
    let (_, entry, _, facts) = client.talk("Grandpa Fennick", None, None).await;
    assert_eq!(entry, "LostReel_Greet");
    assert_eq!(
        facts.quests.get("CopperSnappers"),
        Some(&banter_protocol::QuestStatus::Completed)
    );
    client.close_conversation().await;

    // Another quest's TrackQuest replaces it: Keeper Ines, on another island, reached through a
    // second instance (a new instance places the body afresh).
    drop(client);
    let other = server.another_instance().await;
    let mut client = Recorder::connect(&other, &token).await;
    client.move_to(NEAR_INES).await;
    let talked = client.talk_reply("Keeper Ines").await;
    assert_eq!(
        tracked(&talked).as_deref(),
        Some("CopperSnappers"),
        "accepting another quest does not track it"
    );
    client.lantern_cutscene_done().await;
    let (graph, entry, _, facts) = client.talk("Keeper Ines", None, None).await;
    assert_eq!(entry, "Voyage_Greet");
    let seen = client.walk_to_the_end(&graph, &entry, &facts).await;
    assert!(
        effects(&seen).contains(&Effect::QuestTracked {
            quest: "VoyageToMistral".into()
        }),
        "{seen:?}"
    );
    assert_eq!(tracked(&seen).as_deref(), Some("VoyageToMistral"));
    drop(client);
    other.stop().await.expect("clean shutdown");
    server.stop().await.expect("clean shutdown");
}

/// Where the player's next session lands after its connection dropped mid-scene.
enum Elsewhere {
    /// The server restarted (a deploy, or a crash: the same to the data).
    Restart,
    /// Another instance on the same database, the first one still running.
    AnotherInstance,
}

/// docs/PROTOCOL.md, `cutscene_done`: a cutscene quest whose scene was playing when the
/// connection dropped and the server went away is picked up by the next session: `welcome`
/// names the scene, and `cutscene_done` pays the quest, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cutscene_quest_cut_off_by_a_restart_is_finished_after_reconnecting() {
    let server = TestServer::start_with(|c| c.world.talk_cooldown = Duration::ZERO).await;
    finish_a_cutscene_cut_off(server, Elsewhere::Restart).await;
}

/// The same when the player's reconnect reaches another instance (no sticky sessions), on
/// PostgreSQL, the first instance still up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cutscene_quest_cut_off_on_one_instance_is_finished_on_another() {
    let server = TestServer::start_on_with(banter_e2e::Backend::Postgres, |c| {
        c.world.talk_cooldown = Duration::ZERO;
    })
    .await;
    finish_a_cutscene_cut_off(server, Elsewhere::AnotherInstance).await;
}

async fn finish_a_cutscene_cut_off(server: TestServer, elsewhere: Elsewhere) {
    let (token, player, _) = login(&server, "device-cutscene-drop").await;
    let mut client = Recorder::connect(&server, &token).await;
    assert!(!client.welcome.contains("cutscene"), "{}", client.welcome);
    client.move_to(NEAR_INES).await;
    let talked = client.talk_reply("Keeper Ines").await;
    assert_eq!(
        effects(&talked),
        vec![
            Effect::QuestAccepted {
                quest: "LanternsOfGullRock".into(),
                objectives: vec!["WatchTheLighting".into()],
            },
            Effect::PlayCutscene {
                scene: "LanternLighting".into()
            }
        ]
    );
    // The connection drops mid-scene and the player comes back elsewhere.
    drop(client);
    let (server, first) = match elsewhere {
        Elsewhere::Restart => (server.restart().await, None),
        Elsewhere::AnotherInstance => (server.another_instance().await, Some(server)),
    };

    let mut client = Recorder::connect(&server, &token).await;
    assert!(
        client.welcome.contains(r#""cutscene":"LanternLighting""#),
        "{}",
        client.welcome
    );
    client.move_to(NEAR_INES).await;
    let done = client.lantern_cutscene_done().await;
    assert_eq!(effects(&done), the_lantern_quest_paid());
    let again = client.lantern_cutscene_done().await;
    assert!(
        matches!(
            again.as_slice(),
            [ServerMessage::Error {
                code: ErrorCode::NoCutscene,
                ..
            }]
        ),
        "{again:?}"
    );
    let paid = server
        .database()
        .scalar(&format!(
            "SELECT COUNT(*) FROM reward_ledger WHERE player_id = '{player}'"
        ))
        .await;
    assert_eq!(paid, 1, "paid once");
    server.stop().await.expect("clean shutdown");
    if let Some(first) = first {
        first.stop().await.expect("clean shutdown");
    }
}
