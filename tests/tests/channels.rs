//! Game-server channels end to end (PROTOCOL.md section 16), against a real server and store:
//! credentials issued, listed and revoked with the service key; a channel's HTTP batches (joins,
//! messages, leaves, the `seq` and `ack` rules, long-poll, what is refused and how); the engine's
//! positions; one session per player across channels and WebSockets; a quest paid through a
//! channel; how a channel ends; and the same over one WebSocket.
//!
//! Nothing sleeps to wait: an answer is awaited. Where only a poll can tell (whether a batch
//! already went in before the test does the next thing), the poll is a bounded loop of real
//! requests.

use std::time::{Duration, Instant};

use banter_e2e::*;
use banter_protocol::channel::Event;
use banter_protocol::{
    ActionType, ByeReason, ClientMessage, CloseReason, Effect, ErrorCode, ServerMessage,
};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::{self, Message};

/// Grandpa Fennick stands at (14, 3, -42.5).
const NEAR_FENNICK: [f64; 3] = [14.0, 3.0, -38.0];
/// Far out of Pim's reach.
const FAR_FROM_PIM: [f64; 3] = [-640.0, 2.0, 1200.0];

// The scenarios run on both backends name players of their own: on PostgreSQL every server on
// the test database hears every claim (LISTEN/NOTIFY is database-wide, not per schema), so two
// tests' servers sharing a player id would replace each other's sessions.

/// Between two requests of a bounded poll (which gives up after [`PATIENCE`]).
const POLL_PAUSE: Duration = Duration::from_millis(5);

async fn server_on(backend: Backend) -> TestServer {
    TestServer::start_on_with(backend, |c| c.world.talk_cooldown = Duration::ZERO).await
}

async fn server() -> TestServer {
    server_on(Backend::Sqlite).await
}

/// A server (SQLite) with a channel open for the `rbx-` players.
async fn server_with_channel() -> (TestServer, Channel) {
    let server = server().await;
    let (_, channel) = game(&server).await;
    (server, channel)
}

/// A credential for the `rbx-` players and a channel open with it.
async fn game(server: &TestServer) -> (Credential, Channel) {
    let credential = server.issue_credential("seaside-eu", &["rbx-"]).await;
    let channel = server.open_channel(&credential).await;
    (credential, channel)
}

/// Asserts a JSON error answer: its status and `error` code (`context`: what was sent).
fn assert_refused((status, answer): (u16, Value), expected: (u16, &str), context: &str) {
    assert_eq!((status, code(&answer)), expected, "{context}: {answer}");
}

/// Asserts a `400 bad_request` whose message names `named` (`context`: what was sent).
fn assert_bad_request((status, answer): (u16, Value), named: &str, context: &str) {
    assert_eq!(
        (status, code(&answer)),
        (400, "bad_request"),
        "{context}: {answer}"
    );
    assert!(
        said(&answer).contains(named),
        "{context}: {answer} does not name `{named}`"
    );
}

/// `player`'s session on `channel` still answers: a `SetAfk` with `id` is acknowledged.
async fn assert_still_answers(channel: &mut Channel, player: &str, id: u64) {
    let set_afk = ClientMessage::SetAfk {
        id: Some(id),
        afk: true,
    };
    let answer = channel.batch(vec![], vec![message(player, set_afk)]).await;
    assert_eq!(
        messages_for(&answer.events, player),
        [ServerMessage::Ack { id }]
    );
}

/// Asserts that `player`'s only message in `events` is its `welcome`.
fn assert_welcomed(events: &[Event<ServerMessage>], player: &str) {
    let said = messages_for(events, player);
    assert!(
        matches!(said.as_slice(), [ServerMessage::Welcome { .. }]),
        "{said:?}"
    );
}

/// `player`'s messages in `events`, every one an `error`: their codes and ids.
fn refusals(events: &[Event<ServerMessage>], player: &str) -> Vec<(ErrorCode, Option<u64>)> {
    messages_for(events, player)
        .into_iter()
        .map(|m| match m {
            ServerMessage::Error { code, id, .. } => (code, id),
            other => panic!("{other:?}"),
        })
        .collect()
}

/// A credential for the `rbx-` players and a channel opened with it over a WebSocket (its open
/// answer not yet read).
async fn game_socket(server: &TestServer) -> (Credential, ChannelSocket) {
    let credential = server.issue_credential("seaside-eu", &["rbx-"]).await;
    let socket = server
        .connect_channel(&credential.credential)
        .await
        .expect("upgraded");
    (credential, socket)
}

/// The `error` code of a JSON error body.
fn code(body: &Value) -> &str {
    body["error"].as_str().unwrap_or_default()
}

/// The `message` of a JSON error body.
fn said(body: &Value) -> &str {
    body["message"].as_str().unwrap_or_default()
}

fn choose(response: &str, id: u64) -> ClientMessage {
    ClientMessage::Choose {
        id: Some(id),
        response: response.to_owned(),
    }
}

fn advance(node: &str, id: u64) -> ClientMessage {
    ClientMessage::Advance {
        id: Some(id),
        node: node.to_owned(),
    }
}

fn action(action: ActionType, payload: &str, id: u64) -> ClientMessage {
    ClientMessage::Action {
        id: Some(id),
        action,
        payload: payload.to_owned(),
    }
}

/// Joined, placed next to Pim, talking to him (conversation open): the talk's events.
async fn talking_to_pim(channel: &mut Channel, player: &str) -> Vec<Event<ServerMessage>> {
    let answer = channel
        .batch(
            vec![placed(player, NEAR_PIM)],
            vec![join(player), message(player, talk("Pim", 1))],
        )
        .await;
    let said = messages_for(&answer.events, player);
    assert!(
        matches!(
            said.as_slice(),
            [
                ServerMessage::Welcome { .. },
                ServerMessage::Opened { .. },
                ServerMessage::Ack { id: 1 }
            ]
        ),
        "{said:?}"
    );
    answer.events
}

/// Over a channel's WebSocket: joined, placed next to Pim, talking to him (conversation open);
/// the events up to the talk's `ack`.
async fn socket_talking_to_pim(
    socket: &mut ChannelSocket,
    player: &str,
) -> Vec<Event<ServerMessage>> {
    socket
        .send_batch(
            vec![placed(player, NEAR_PIM)],
            vec![join(player), message(player, talk("Pim", 1))],
        )
        .await;
    socket.events_until(|e| acked(e, player, 1)).await
}

/// The HTTP status of a refused upgrade (and its body), or `None` if it was accepted.
fn refused_upgrade<T>(result: Result<T, tungstenite::Error>) -> Option<(u16, String)> {
    match result {
        Ok(_) => None,
        Err(tungstenite::Error::Http(response)) => Some((
            response.status().as_u16(),
            String::from_utf8_lossy(response.body().as_deref().unwrap_or_default()).into_owned(),
        )),
        Err(other) => panic!("the upgrade failed without an answer: {other}"),
    }
}

/// The player's own WebSocket, once no channel carries the player any more (a channel's end
/// releases its players as its task gets to them: polled, bounded). Its welcome is read.
async fn connect_once_released(server: &TestServer, player: &str) -> Client {
    let token = server.player_token(player);
    let deadline = Instant::now() + PATIENCE;
    while Instant::now() < deadline {
        match server.connect_raw(&token).await {
            Ok(mut client) => match client.recv().await {
                ServerMessage::Welcome { .. } => return client,
                other => panic!("expected welcome, got {other:?}"),
            },
            Err(e) => {
                let (status, body) = refused_upgrade::<()>(Err(e)).expect("refused");
                assert_eq!(status, 409, "{body}");
                tokio::time::sleep(POLL_PAUSE).await;
            }
        }
    }
    panic!("{player} is still carried by a channel");
}

// ---------------------------------------------------------------------------------------------
// 16.1 Credentials.

/// Waits until the wall clock is past `ms` (Unix milliseconds): the next credential is issued
/// in a later millisecond, so "oldest first" has one answer.
fn past(ms: i64) {
    while i64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("after 1970")
            .as_millis(),
    )
    .expect("a Unix time in ms")
        <= ms
    {
        std::thread::yield_now();
    }
}

async fn credentials_are_shown_once_listed_oldest_first_and_revoked_idempotently(backend: Backend) {
    let server = server_on(backend).await;
    let first = server.issue_credential("seaside-eu", &["rbx-"]).await;
    // The answer: exactly the documented fields, the credential naming its id.
    let issued = first.issued.as_object().expect("an object");
    let mut fields: Vec<&str> = issued.keys().map(String::as_str).collect();
    fields.sort_unstable();
    assert_eq!(
        fields,
        ["created_at_ms", "credential", "id", "name", "players"]
    );
    assert_eq!(first.issued["name"], "seaside-eu");
    assert_eq!(first.issued["players"], json!(["rbx-"]));
    let hex = first.id.strip_prefix("gs_").expect("gs_<id>");
    assert!(
        hex.len() == 16 && hex.bytes().all(|b| b.is_ascii_hexdigit()),
        "{}",
        first.id
    );
    let secret = first
        .credential
        .strip_prefix(&format!("bgs_{hex}_"))
        .expect("bgs_<id>_<secret>");
    assert_eq!(secret.len(), 43, "{}", first.credential);

    past(
        first.issued["created_at_ms"]
            .as_i64()
            .expect("created_at_ms"),
    );
    let second = server
        .issue_credential("seaside-us.2", &["rbx-", "steam_"])
        .await;
    past(
        second.issued["created_at_ms"]
            .as_i64()
            .expect("created_at_ms"),
    );
    let third = server.issue_credential("lobby_1", &["d-"]).await;
    assert_ne!(first.credential, second.credential);

    // Listed oldest first, never with a credential.
    let (status, listed) = server.admin("GET", "/admin/game-servers", "").await;
    assert_eq!(status, 200, "{listed}");
    let servers = listed["game_servers"].as_array().expect("game_servers");
    let ids: Vec<&str> = servers.iter().filter_map(|s| s["id"].as_str()).collect();
    assert_eq!(ids, [&first.id, &second.id, &third.id]);
    assert_eq!(
        servers[1],
        json!({"id": second.id, "name": "seaside-us.2", "players": ["rbx-", "steam_"],
            "created_at_ms": second.issued["created_at_ms"]})
    );
    let text = listed.to_string();
    for credential in [&first, &second, &third] {
        // `bgs_<id>_<secret>`: the secret is base64url, so it may hold `_` itself.
        let secret = credential
            .credential
            .splitn(3, '_')
            .nth(2)
            .expect("a secret");
        assert_eq!(secret.len(), 43, "{}", credential.credential);
        assert!(!text.contains(secret), "a secret listed: {text}");
    }
    assert!(!text.contains("credential"), "{text}");

    // Revoked: `200`, and again with the first revocation's time; listed with it.
    let revoked = server.revoke_credential(&second.id).await;
    assert_eq!(revoked["id"], second.id.as_str());
    let at = revoked["revoked_at_ms"].as_i64().expect("revoked_at_ms");
    assert_eq!(
        revoked.as_object().map(serde_json::Map::len),
        Some(2),
        "{revoked}"
    );
    past(at);
    assert_eq!(server.revoke_credential(&second.id).await, revoked);
    let (_, listed) = server.admin("GET", "/admin/game-servers", "").await;
    assert_eq!(listed["game_servers"][1]["revoked_at_ms"], at);
    assert!(
        listed["game_servers"][0].get("revoked_at_ms").is_none(),
        "{listed}"
    );

    // An unknown id, well-formed or not, is `404` `not_found`.
    for id in ["gs_0123456789abcdef", "nope"] {
        let (status, body) = server
            .admin("DELETE", &format!("/admin/game-servers/{id}"), "")
            .await;
        assert_eq!((status, code(&body)), (404, "not_found"), "{id}: {body}");
    }

    // The revoked credential's next request is `401`; the others still open channels.
    let (status, body) = server
        .bearer_json("POST", "/v1/channels", Some(&second.credential), "")
        .await;
    assert_eq!((status, code(&body)), (401, "unauthorized"), "{body}");
    server.open_channel(&first).await;
    server.open_channel(&third).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_issue_request_outside_the_rules_is_400_naming_the_field() {
    let server = server().await;
    let long = "a".repeat(65);
    let seventeen: Vec<String> = (0..17).map(|i| format!("p{i}-")).collect();
    let cases = [
        (json!({"name": "", "players": ["rbx-"]}), "name"),
        (json!({"name": "sea side", "players": ["rbx-"]}), "name"),
        (json!({"name": long, "players": ["rbx-"]}), "name"),
        (json!({"name": "eu", "players": []}), "players"),
        (json!({"name": "eu", "players": [""]}), "players"),
        (json!({"name": "eu", "players": ["rbx:"]}), "players"),
        (json!({"name": "eu", "players": ["rbx.1"]}), "players"),
        (json!({"name": "eu", "players": [long]}), "players"),
        (json!({"name": "eu", "players": seventeen}), "players"),
        (json!({"name": "eu"}), "players"),
        (json!({"players": ["rbx-"]}), "name"),
        (json!({"name": "eu", "players": "rbx-"}), "players"),
        (
            json!({"name": "eu", "players": ["rbx-"], "colour": "blue"}),
            "colour",
        ),
    ];
    for (body, field) in cases {
        let (status, answer) = server
            .admin("POST", "/admin/game-servers", &body.to_string())
            .await;
        assert_bad_request((status, answer), field, &body.to_string());
    }
    let (status, answer) = server
        .admin("POST", "/admin/game-servers", "not json")
        .await;
    assert_eq!((status, code(&answer)), (400, "bad_request"), "{answer}");
    // Sixteen prefixes of 64 characters are within the rules; nothing refused was stored.
    let sixteen: Vec<String> = (0..16).map(|i| format!("{i:0>64}")).collect();
    let body = json!({"name": "a".repeat(64), "players": sixteen}).to_string();
    let (status, answer) = server.admin("POST", "/admin/game-servers", &body).await;
    assert_eq!(status, 201, "{answer}");
    let (_, listed) = server.admin("GET", "/admin/game-servers", "").await;
    assert_eq!(
        listed["game_servers"].as_array().map(Vec::len),
        Some(1),
        "{listed}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credential_routes_need_the_service_key_and_channel_routes_a_credential() {
    let server = server().await;
    let (credential, channel) = game(&server).await;
    let token = server.player_token("rbx-1");
    let key = server.config.service_key.clone();
    let issue = json!({"name": "eu", "players": ["rbx-"]}).to_string();
    let admin = [
        ("POST", "/admin/game-servers".to_owned(), issue.as_str()),
        ("GET", "/admin/game-servers".to_owned(), ""),
        (
            "DELETE",
            format!("/admin/game-servers/{}", credential.id),
            "",
        ),
    ];
    for (method, path, body) in &admin {
        let answer = server.bearer_json(method, path, None, body).await;
        assert_refused(answer, (401, "unauthorized"), &format!("{method} {path}"));
        for other in [
            token.as_str(),
            credential.credential.as_str(),
            "not-the-key",
        ] {
            let answer = server.bearer_json(method, path, Some(other), body).await;
            assert_refused(answer, (403, "forbidden"), &format!("{method} {path}"));
        }
    }

    let batch = json!({"seq": 1}).to_string();
    let routes = [
        ("POST", "/v1/channels".to_owned(), ""),
        ("POST", channel.path(), batch.as_str()),
        ("DELETE", format!("/v1/channels/{}", channel.id), ""),
    ];
    // A well-formed credential the store never issued.
    let forged = format!("bgs_0123456789abcdef_{}", "A".repeat(43));
    let wrong_secret = format!(
        "{}B",
        &credential.credential[..credential.credential.len() - 1]
    );
    for (method, path, body) in &routes {
        let answer = server.bearer_json(method, path, None, body).await;
        assert_refused(answer, (401, "unauthorized"), &format!("{method} {path}"));
        for known in [key.as_str(), token.as_str()] {
            let answer = server.bearer_json(method, path, Some(known), body).await;
            assert_refused(answer, (403, "forbidden"), &format!("{method} {path}"));
        }
        for unknown in [forged.as_str(), wrong_secret.as_str(), "bgs_garbage"] {
            let answer = server.bearer_json(method, path, Some(unknown), body).await;
            assert_refused(answer, (401, "unauthorized"), &format!("{method} {path}"));
        }
    }
    // The WebSocket transport alike.
    assert_eq!(
        refused_upgrade(server.connect_channel(&key).await).map(|(s, _)| s),
        Some(403)
    );
    assert_eq!(
        refused_upgrade(server.connect_channel(&forged).await).map(|(s, _)| s),
        Some(401)
    );

    // Another credential's channel is `unknown_channel`, as is one that never was.
    let other = server.issue_credential("other", &["rbx-"]).await;
    let mut theirs = channel.clone();
    theirs.credential = other.credential.clone();
    let unknown = (404, "unknown_channel");
    assert_refused(theirs.post_text(&batch).await, unknown, "another's batch");
    assert_refused(theirs.delete().await, unknown, "another's delete");
    let mut never = channel.clone();
    never.id = "ch_AAAAAAAAAAAAAAAAAAAAAA".into();
    let (status, answer) = never.post_text(&batch).await;
    assert_eq!(
        (status, code(&answer)),
        (404, "unknown_channel"),
        "{answer}"
    );
    // And the owner's channel was untouched by all of it.
    let (status, answer) = channel.post_text(&batch).await;
    assert_eq!(status, 200, "{answer}");
}

async fn revoking_a_credential_ends_its_channels_at_once_and_parks_their_conversations(
    backend: Backend,
) {
    let server = server_on(backend).await;
    let (credential, mut channel) = game(&server).await;
    let events = talking_to_pim(&mut channel, "rbx-revoke-1").await;
    let resume_token = welcome_token(&events, "rbx-revoke-1");
    server.revoke_credential(&credential.id).await;

    // The next request is `401`, whatever it asks.
    let body = channel.next_body(vec![], vec![], 0);
    let (status, answer) = channel.post(&body).await;
    assert_eq!((status, code(&answer)), (401, "unauthorized"), "{answer}");
    let (status, answer) = server
        .bearer_json("POST", "/v1/channels", Some(&credential.credential), "")
        .await;
    assert_eq!((status, code(&answer)), (401, "unauthorized"), "{answer}");

    // The player's session ended as a dropped connection does: the conversation was parked.
    let mut client = connect_once_released(&server, "rbx-revoke-1").await;
    client.move_to(NEAR_PIM).await.expect("spawned");
    let resumed = client.resume(&resume_token).await.expect("resumed");
    assert_eq!(resumed.resumed().map(|(c, _)| c), Some("Pim"));
}

// ---------------------------------------------------------------------------------------------
// 16.2 and 16.3: a channel and its batches.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_opened_channel_states_its_limits() {
    let server = server().await;
    let credential = server.issue_credential("seaside-eu", &["rbx-"]).await;
    let (status, opened) = server
        .bearer_json("POST", "/v1/channels", Some(&credential.credential), "")
        .await;
    assert_eq!(status, 201, "{opened}");
    let id = opened["channel"].as_str().expect("a channel id");
    let random = id.strip_prefix("ch_").expect("ch_...");
    assert!(
        random.len() == 22
            && random
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
        "{id}"
    );
    assert_eq!(
        opened["limits"],
        json!({"max_items": 1000, "max_positions": 1000, "max_request_bytes": 1_048_576,
            "max_events": 1000, "max_answer_bytes": 1_048_576, "max_wait_ms": 25_000,
            "idle_timeout_ms": 60_000, "max_players": 1000})
    );
    // `{}` opens one too, a new one each time; anything else in the body is `400`.
    let (status, again) = server
        .bearer_json("POST", "/v1/channels", Some(&credential.credential), "{}")
        .await;
    assert_eq!(status, 201, "{again}");
    assert_ne!(again["channel"], opened["channel"]);
    let (status, refused) = server
        .bearer_json(
            "POST",
            "/v1/channels",
            Some(&credential.credential),
            r#"{"colour":"blue"}"#,
        )
        .await;
    assert_eq!((status, code(&refused)), (400, "bad_request"), "{refused}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_join_is_welcomed_messages_are_answered_in_order_and_a_leave_says_nothing() {
    let (_server, mut channel) = server_with_channel().await;
    let answer = channel
        .batch(
            vec![placed("rbx-1", NEAR_PIM)],
            vec![
                json!({"player": "rbx-1", "join": {"locale": "en-GB"}}),
                message("rbx-1", talk("Pim", 1)),
                message("rbx-1", ClientMessage::Close { id: Some(2) }),
                message(
                    "rbx-1",
                    ClientMessage::SetAfk {
                        id: Some(3),
                        afk: true,
                    },
                ),
                message("rbx-1", ClientMessage::Close { id: Some(4) }),
            ],
        )
        .await;
    assert_eq!(answer.seq, 1);
    assert!(!answer.more);
    // Numbered from 1 without gaps, all for the player, in the order a WebSocket sends them.
    let numbers: Vec<u64> = answer.events.iter().map(|e| e.n).collect();
    assert_eq!(numbers, (1..=numbers.len() as u64).collect::<Vec<_>>());
    let said = messages_for(&answer.events, "rbx-1");
    assert_eq!(said.len(), answer.events.len());
    match said.as_slice() {
        [
            ServerMessage::Welcome { player, locale, .. },
            ServerMessage::Opened { conversation, .. },
            ServerMessage::Ack { id: 1 },
            ServerMessage::Closed {
                reason: CloseReason::Client,
            },
            ServerMessage::Ack { id: 2 },
            ServerMessage::Ack { id: 3 },
            ServerMessage::Error {
                id: Some(4),
                code: ErrorCode::NoConversation,
                ..
            },
        ] => {
            assert_eq!(player, "rbx-1");
            assert_eq!(locale, "en");
            assert_eq!(conversation, "Pim");
        }
        other => panic!("{other:?}"),
    }

    // A leave is answered by nothing; the player is no longer on the channel.
    let answer = channel
        .batch(
            vec![],
            vec![
                leave("rbx-1"),
                message("rbx-1", ClientMessage::Close { id: Some(5) }),
            ],
        )
        .await;
    assert_eq!(
        the_error(&answer.events, "rbx-1"),
        (ErrorCode::NotJoined, Some(5))
    );
    assert_eq!(answer.events.len(), 1, "{:?}", answer.events);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retried_batch_applies_nothing_again_and_answers_the_same() {
    let (_server, mut channel) = server_with_channel().await;
    channel
        .batch(vec![placed("rbx-1", NEAR_PIM)], vec![join("rbx-1")])
        .await;
    let first = channel
        .batch(
            vec![],
            vec![message("rbx-1", talk("Pim", 1)), join("rbx-2")],
        )
        .await;
    let said = messages_for(&first.events, "rbx-1");
    assert!(
        matches!(
            said.as_slice(),
            [ServerMessage::Opened { .. }, ServerMessage::Ack { id: 1 }]
        ),
        "{said:?}"
    );
    // The answer was lost: the same batch again. Applied again, the talk would be refused
    // (`conversation_open`) and the join `already_joined`.
    let again = channel.retry().await;
    assert_eq!(again, first);
    let again = channel.retry().await;
    assert_eq!(again, first);
    // The next batch finds nothing left over from the retries.
    let next = channel.batch(vec![], vec![]).await;
    assert_eq!(next.events, vec![]);
    assert_eq!(next.seq, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_batch_or_a_gap_is_409_and_changes_nothing() {
    let (_server, mut channel) = server_with_channel().await;
    // A fresh channel's last seq is 0: 0 is older, 2 skips ahead.
    for (seq, refused) in [(0, "stale_batch"), (2, "batch_gap")] {
        let body = json!({"seq": seq, "items": [join("rbx-9")]});
        let (status, answer) = channel.post(&body).await;
        assert_eq!(
            (status, code(&answer)),
            (409, refused),
            "seq {seq}: {answer}"
        );
    }
    channel.batch(vec![], vec![join("rbx-1")]).await;
    channel.batch(vec![], vec![]).await;
    for (seq, refused) in [(1, "stale_batch"), (4, "batch_gap"), (9, "batch_gap")] {
        let body = json!({"seq": seq, "ack": channel.ack,
            "positions": [placed("rbx-1", FAR_FROM_PIM)],
            "items": [join("rbx-2"), leave("rbx-1")]});
        let (status, answer) = channel.post(&body).await;
        assert_eq!(
            (status, code(&answer)),
            (409, refused),
            "seq {seq}: {answer}"
        );
    }
    // Nothing of them was applied: rbx-2 joins now, rbx-1 is still on the channel, never placed.
    let answer = channel
        .batch(
            vec![],
            vec![
                join("rbx-2"),
                join("rbx-1"),
                message("rbx-1", talk("Pim", 1)),
            ],
        )
        .await;
    assert_eq!(answer.seq, 3);
    assert_welcomed(&answer.events, "rbx-2");
    assert_eq!(
        refusals(&answer.events, "rbx-1"),
        [
            (ErrorCode::AlreadyJoined, None),
            (ErrorCode::NoBody, Some(1))
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ack_forgets_events_and_one_past_the_last_event_is_400() {
    let (_server, mut channel) = server_with_channel().await;
    let answer = channel
        .batch(vec![], vec![join("rbx-1"), join("rbx-2")])
        .await;
    assert_eq!(answer.events.len(), 2);
    // Unacknowledged, they come again (with the batch after, as with a retry).
    let body = json!({"seq": 2, "ack": 0});
    let (status, again) = channel.post(&body).await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(read_answer(&again).events, answer.events);
    // Acknowledged up to 1: only 2 comes.
    let (_, again) = channel.post(&json!({"seq": 3, "ack": 1})).await;
    let numbers: Vec<u64> = read_answer(&again).events.iter().map(|e| e.n).collect();
    assert_eq!(numbers, [2]);
    // Acknowledged up to 2: gone for good, even for an older ack.
    let (_, after) = channel.post(&json!({"seq": 4, "ack": 2})).await;
    assert_eq!(read_answer(&after).events, vec![]);
    let (_, older) = channel.post(&json!({"seq": 5, "ack": 0})).await;
    assert_eq!(read_answer(&older).events, vec![]);

    // An ack past the last event sent is `400`, and the batch is not applied.
    let (status, refused) = channel
        .post(&json!({"seq": 6, "ack": 3, "items": [join("rbx-3")]}))
        .await;
    assert_eq!((status, code(&refused)), (400, "bad_request"), "{refused}");
    assert!(said(&refused).contains("ack"), "{refused}");
    let (status, applied) = channel
        .post(&json!({"seq": 6, "ack": 2, "items": [join("rbx-3")]}))
        .await;
    assert_eq!(status, 200, "{applied}");
    let applied = read_answer(&applied);
    assert_eq!(applied.events.iter().map(|e| e.n).collect::<Vec<_>>(), [3]);
    assert!(matches!(
        applied.events[0].message,
        ServerMessage::Welcome { .. }
    ));
}

/// Spawns a batch request; its status, body and how long it took.
fn spawn_batch(
    channel: &Channel,
    body: Value,
) -> tokio::task::JoinHandle<((u16, Value), Duration)> {
    let channel = channel.clone();
    tokio::spawn(async move {
        let started = Instant::now();
        let answer = channel.post(&body).await;
        (answer, started.elapsed())
    })
}

/// The answer of a long-poll [`spawn_batch`]ed with a `wait_ms` of 10 s, which must have
/// returned `200` before its time was up.
async fn answered_early(
    waiting: tokio::task::JoinHandle<((u16, Value), Duration)>,
) -> banter_protocol::channel::Answer<ServerMessage> {
    let ((status, answer), took) = waiting.await.expect("the batch task");
    assert_eq!(status, 200, "{answer}");
    assert!(
        took < Duration::from_secs(10),
        "waited its whole time: {took:?}"
    );
    read_answer(&answer)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_answer_returns_when_a_game_event_advances_a_channel_players_objective() {
    let (server, mut channel) = server_with_channel().await;
    let id = |n| Some(n);
    channel
        .batch(
            vec![placed("rbx-1", NEAR_FENNICK)],
            vec![
                join("rbx-1"),
                join("rbx-2"),
                message("rbx-1", talk("Grandpa Fennick", 1)),
                message("rbx-1", choose("CopperSnappers_Greet_r1", 2)),
                message(
                    "rbx-1",
                    action(ActionType::AcceptQuest, "CopperSnappers", 3),
                ),
                message("rbx-1", ClientMessage::Close { id: id(4) }),
            ],
        )
        .await;
    // A long-poll whose batch lets rbx-2 go: once rbx-2's own WebSocket is accepted, the batch
    // was applied, so the answer is waiting (nothing after its ack: a leave says nothing).
    let body = channel.next_body(vec![], vec![leave("rbx-2")], 10_000);
    let waiting = spawn_batch(&channel, body);
    let client = connect_once_released(&server, "rbx-2").await;
    client.close().await;
    assert!(!waiting.is_finished(), "answered before anything happened");

    let event = json!({"event_id": "catch-ch-1", "player": "rbx-1", "kind": "fish_caught",
        "species": "Copper Snapper", "rarity": "common", "island": "brinehollow", "amount": 1});
    let (status, body) = server.post_event(&event.to_string()).await;
    assert_eq!(status, 200, "{body}");
    let answer = answered_early(waiting).await;
    assert_eq!(answer.seq, channel.seq + 1);
    match messages_for(&answer.events, "rbx-1").as_slice() {
        [
            ServerMessage::Effect {
                action: ActionType::AdvanceObjective,
                effect,
                ..
            },
        ] => {
            assert!(
                matches!(effect, Effect::ObjectiveAdvanced { quest, progress: 1, .. } if quest == "CopperSnappers"),
                "{effect:?}"
            );
        }
        other => panic!("expected the pushed objective, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_answer_returns_when_a_newer_batch_arrives() {
    let (_server, mut channel) = server_with_channel().await;
    channel.batch(vec![], vec![join("rbx-1")]).await;
    let first = channel.next_body(vec![], vec![], 10_000);
    let waiting = spawn_batch(&channel, first.clone());
    // The newer batch: a gap until the first went in (polled), then applied.
    let newer = json!({"seq": channel.seq + 2, "ack": channel.ack});
    let deadline = Instant::now() + PATIENCE;
    let answer = loop {
        let (status, answer) = channel.post(&newer).await;
        if status == 200 {
            break answer;
        }
        assert_eq!((status, code(&answer)), (409, "batch_gap"), "{answer}");
        assert!(Instant::now() < deadline, "the first batch never went in");
        tokio::time::sleep(POLL_PAUSE).await;
    };
    assert_eq!(read_answer(&answer).events, vec![]);
    let answer = answered_early(waiting).await;
    assert_eq!((answer.seq, answer.events.len()), (channel.seq + 1, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_answer_with_nothing_to_say_returns_at_wait_ms() {
    let (_server, mut channel) = server_with_channel().await;
    let started = Instant::now();
    let answer = channel.batch_waiting(vec![], vec![], 300).await;
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(300), "{took:?}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert_eq!(
        (answer.seq, answer.events.len(), answer.more),
        (1, 0, false)
    );
    // An event waiting already answers at once, whatever `wait_ms` says.
    let started = Instant::now();
    let answer = channel
        .batch_waiting(vec![], vec![join("rbx-1")], 20_000)
        .await;
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(answer.events.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_that_cannot_be_read_is_400_naming_where_and_changes_nothing() {
    let (_server, mut channel) = server_with_channel().await;
    let ok = join("rbx-1");
    let too_many: Vec<Value> = (0..1001).map(|i| join(&format!("rbx-{i}"))).collect();
    let too_many_positions: Vec<Value> = (0..1001)
        .map(|i| placed(&format!("rbx-{i}"), NEAR_PIM))
        .collect();
    let cases: Vec<(String, &str)> = vec![
        ("not json".into(), ""),
        ("[]".into(), ""),
        (json!({"ack": 0}).to_string(), "seq"),
        (json!({"seq": 1, "colour": "blue"}).to_string(), "colour"),
        (json!({"seq": -1}).to_string(), "seq"),
        (json!({"seq": 1, "wait_ms": 25_001}).to_string(), "wait_ms"),
        (
            json!({"seq": 1, "items": [ok, {"player": "rbx-1", "join": {}, "leave": true}]})
                .to_string(),
            "items[1]",
        ),
        (json!({"seq": 1, "items": [ok, {"player": "rbx-1"}]}).to_string(), "items[1]"),
        (
            json!({"seq": 1, "items": [ok, ok, {"player": "rbx-1", "leave": false}]}).to_string(),
            "items[2]",
        ),
        (
            json!({"seq": 1, "items": [ok, {"player": "rbx-1", "jump": {}}]}).to_string(),
            "items[1]",
        ),
        (
            json!({"seq": 1, "items": [ok, {"player": "rbx 1", "join": {}}]}).to_string(),
            "items[1].player",
        ),
        (
            json!({"seq": 1, "items": [ok, {"player": "", "join": {}}]}).to_string(),
            "items[1].player",
        ),
        (
            json!({"seq": 1, "items": [ok, {"player": "r".repeat(65), "join": {}}]}).to_string(),
            "items[1].player",
        ),
        (
            json!({"seq": 1, "items": [ok, {"player": "rbx-1", "join": {"colour": 1}}]})
                .to_string(),
            "items[1]",
        ),
        (
            json!({"seq": 1, "positions": [{"player": "rbx-1", "position": [1, 2]}]}).to_string(),
            "positions[0]",
        ),
        (
            r#"{"seq":1,"positions":[{"player":"rbx-1","position":[1,2,3]},{"player":"rbx-1","position":[1e999,2,3]}]}"#.into(),
            "positions[1]",
        ),
        (
            json!({"seq": 1, "positions": [{"player": "rbx?", "position": [1, 2, 3]}]})
                .to_string(),
            "positions[0].player",
        ),
        (json!({"seq": 1, "items": too_many}).to_string(), "items"),
        (
            json!({"seq": 1, "positions": too_many_positions}).to_string(),
            "positions",
        ),
    ];
    for (body, place) in &cases {
        let shown: String = body.chars().take(120).collect();
        assert_bad_request(channel.post_text(body).await, place, &shown);
    }
    // Nothing was applied: seq 1 is still next, and the events start at 1.
    let answer = channel.batch(vec![], vec![join("rbx-1")]).await;
    assert_eq!(answer.seq, 1);
    assert_eq!(answer.events.iter().map(|e| e.n).collect::<Vec<_>>(), [1]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_over_max_request_bytes_is_413() {
    let (_server, mut channel) = server_with_channel().await;
    let max = channel.limits["max_request_bytes"]
        .as_u64()
        .expect("a limit") as usize;
    let frame = json!({"seq": 1, "items": [{"player": "rbx-1", "message":
        {"type": "talk", "npc": ""}}]})
    .to_string();
    let padding = "a".repeat(max + 1 - frame.len());
    let body = json!({"seq": 1, "items": [{"player": "rbx-1", "message":
        {"type": "talk", "npc": padding}}]})
    .to_string();
    assert_eq!(body.len(), max + 1);
    let (status, answer) = channel.post_text(&body).await;
    assert_eq!(
        (status, code(&answer)),
        (413, "payload_too_large"),
        "{answer}"
    );
    // Nothing applied.
    let answer = channel.batch(vec![], vec![join("rbx-1")]).await;
    assert_eq!(answer.seq, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_join_past_max_players_is_channel_full() {
    let server = TestServer::start_with(|c| c.channel_max_players = 2).await;
    let (_, mut channel) = game(&server).await;
    assert_eq!(channel.limits["max_players"], 2);
    let answer = channel
        .batch(vec![], vec![join("rbx-1"), join("rbx-2"), join("rbx-3")])
        .await;
    assert_eq!(
        the_error(&answer.events, "rbx-3"),
        (ErrorCode::ChannelFull, None)
    );
    // A leave makes room.
    let answer = channel
        .batch(vec![], vec![leave("rbx-1"), join("rbx-3")])
        .await;
    assert_welcomed(&answer.events, "rbx-3");
}

// ---------------------------------------------------------------------------------------------
// 16.4 Positions.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_joined_player_placed_near_an_npc_can_talk() {
    let (_server, mut channel) = server_with_channel().await;
    // Placed before the join (kept for it), in the same batch.
    talking_to_pim(&mut channel, "rbx-1").await;
    // Placed after the join, in a later batch; the engine's position needs no speed budget.
    channel.batch(vec![], vec![join("rbx-2")]).await;
    channel
        .batch(vec![placed("rbx-2", [5000.0, 2.0, 5000.0])], vec![])
        .await;
    let answer = channel
        .batch(
            vec![placed("rbx-2", NEAR_PIM)],
            vec![message("rbx-2", talk("Pim", 9))],
        )
        .await;
    assert!(
        matches!(
            messages_for(&answer.events, "rbx-2").as_slice(),
            [ServerMessage::Opened { .. }, ServerMessage::Ack { id: 9 }]
        ),
        "{:?}",
        answer.events
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_player_never_placed_has_no_body() {
    let (_server, mut channel) = server_with_channel().await;
    let answer = channel
        .batch(
            vec![],
            vec![join("rbx-1"), message("rbx-1", talk("Pim", 1))],
        )
        .await;
    assert_eq!(
        the_error(&answer.events, "rbx-1"),
        (ErrorCode::NoBody, Some(1))
    );
    match &messages_for(&answer.events, "rbx-1")[0] {
        ServerMessage::Welcome { position, .. } => assert_eq!(*position, None),
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_from_a_channel_player_is_position_owned() {
    let (_server, mut channel) = server_with_channel().await;
    let moved = ClientMessage::Move {
        id: Some(1),
        position: NEAR_PIM,
    };
    let answer = channel
        .batch(
            vec![],
            vec![
                join("rbx-1"),
                message("rbx-1", moved),
                message("rbx-1", talk("Pim", 2)),
            ],
        )
        .await;
    let refusals: Vec<_> = messages_for(&answer.events, "rbx-1")
        .into_iter()
        .filter_map(|m| match m {
            ServerMessage::Error { code, id, .. } => Some((code, id)),
            _ => None,
        })
        .collect();
    // The move changed nothing: the player still has no body.
    assert_eq!(
        refusals,
        [
            (ErrorCode::PositionOwned, Some(1)),
            (ErrorCode::NoBody, Some(2))
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_position_out_of_reach_during_a_conversation_closes_it_walked_away() {
    let (_server, mut channel) = server_with_channel().await;
    talking_to_pim(&mut channel, "rbx-1").await;
    let answer = channel
        .batch(vec![placed("rbx-1", FAR_FROM_PIM)], vec![])
        .await;
    assert_eq!(
        messages_for(&answer.events, "rbx-1"),
        [ServerMessage::Closed {
            reason: CloseReason::WalkedAway
        }]
    );
    let answer = channel
        .batch(
            vec![],
            vec![message("rbx-1", ClientMessage::Close { id: Some(2) })],
        )
        .await;
    assert_eq!(
        the_error(&answer.events, "rbx-1"),
        (ErrorCode::NoConversation, Some(2))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_position_for_a_player_outside_the_scope_is_not_in_scope() {
    let (_server, mut channel) = server_with_channel().await;
    let answer = channel
        .batch(
            vec![placed("steam_1", NEAR_PIM), placed("rbx-1", NEAR_PIM)],
            vec![join("rbx-1")],
        )
        .await;
    assert_eq!(
        the_error(&answer.events, "steam_1"),
        (ErrorCode::NotInScope, None)
    );
    assert_eq!(messages_for(&answer.events, "steam_1").len(), 1);
    assert_welcomed(&answer.events, "rbx-1");
}

// ---------------------------------------------------------------------------------------------
// Per-player refusals; one session per player.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_join_outside_the_scope_is_not_in_scope() {
    let (_server, mut channel) = server_with_channel().await;
    // `rbx1` does not start with `rbx-`.
    let answer = channel
        .batch(vec![], vec![join("steam_1"), join("rbx1"), join("rbx-1")])
        .await;
    for outside in ["steam_1", "rbx1"] {
        let refused = the_error(&answer.events, outside);
        assert_eq!(refused, (ErrorCode::NotInScope, None), "{outside}");
    }
    assert_eq!(answer.events.len(), 3, "{:?}", answer.events);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_or_leave_for_a_player_not_joined_is_not_joined() {
    let (_server, mut channel) = server_with_channel().await;
    let answer = channel
        .batch(vec![], vec![message("rbx-1", talk("Pim", 7))])
        .await;
    assert_eq!(
        the_error(&answer.events, "rbx-1"),
        (ErrorCode::NotJoined, Some(7))
    );
    let answer = channel
        .batch(
            vec![],
            vec![
                message("rbx-1", ClientMessage::Close { id: None }),
                leave("rbx-1"),
            ],
        )
        .await;
    assert_eq!(
        refusals(&answer.events, "rbx-1"),
        [(ErrorCode::NotJoined, None), (ErrorCode::NotJoined, None)]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_join_is_already_joined() {
    let (_server, mut channel) = server_with_channel().await;
    let answer = channel.batch(vec![], vec![join("rbx-1"); 2]).await;
    let said = messages_for(&answer.events, "rbx-1");
    assert!(matches!(said[0], ServerMessage::Welcome { .. }), "{said:?}");
    assert_eq!(
        the_error(&answer.events, "rbx-1"),
        (ErrorCode::AlreadyJoined, None)
    );
    let answer = channel.batch(vec![], vec![join("rbx-1")]).await;
    assert_eq!(
        the_error(&answer.events, "rbx-1"),
        (ErrorCode::AlreadyJoined, None)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_direct_websocket_for_a_channel_carried_player_is_409_carried_elsewhere() {
    let (server, mut channel) = server_with_channel().await;
    channel.batch(vec![], vec![join("rbx-1")]).await;
    let token = server.player_token("rbx-1");
    let (status, body) =
        refused_upgrade(server.connect_raw(&token).await).expect("the upgrade is refused");
    assert_eq!(status, 409, "{body}");
    let body: Value = serde_json::from_str(&body).expect("a JSON error");
    assert_eq!(code(&body), "carried_elsewhere", "{body}");
    // The player's session on the channel is untouched.
    assert_still_answers(&mut channel, "rbx-1", 1).await;
    // Once the game server lets it go, the player's own client connects.
    channel.batch(vec![], vec![leave("rbx-1")]).await;
    connect_once_released(&server, "rbx-1").await.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_join_on_another_credentials_channel_is_carried_elsewhere() {
    let server = server().await;
    let (_, mut ours) = game(&server).await;
    let other = server.issue_credential("seaside-us", &["rbx-"]).await;
    let mut theirs = server.open_channel(&other).await;
    ours.batch(vec![], vec![join("rbx-1")]).await;
    let answer = theirs.batch(vec![], vec![join("rbx-1")]).await;
    assert_eq!(
        the_error(&answer.events, "rbx-1"),
        (ErrorCode::CarriedElsewhere, None)
    );
    assert_eq!(answer.events.len(), 1);
    // Still ours.
    assert_still_answers(&mut ours, "rbx-1", 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_join_on_another_channel_of_the_same_credential_takes_the_player_over() {
    let server = server().await;
    let (credential, mut old) = game(&server).await;
    let mut new = server.open_channel(&credential).await;
    old.batch(vec![], vec![join("rbx-1"), join("rbx-2")]).await;
    let answer = new.batch(vec![], vec![join("rbx-1")]).await;
    assert_welcomed(&answer.events, "rbx-1");
    // The old channel is told, with a long-poll that waits for it.
    let answer = old.batch_waiting(vec![], vec![], 10_000).await;
    match messages_for(&answer.events, "rbx-1").as_slice() {
        [ServerMessage::Bye { reason, .. }] => assert_eq!(*reason, ByeReason::Replaced),
        other => panic!("expected bye replaced, got {other:?}"),
    }
    // After the bye the player is no longer on the old channel; rbx-2 still is.
    let answer = old
        .batch(
            vec![],
            vec![
                message(
                    "rbx-1",
                    ClientMessage::SetAfk {
                        id: Some(1),
                        afk: true,
                    },
                ),
                message(
                    "rbx-2",
                    ClientMessage::SetAfk {
                        id: Some(2),
                        afk: true,
                    },
                ),
            ],
        )
        .await;
    assert_eq!(
        the_error(&answer.events, "rbx-1"),
        (ErrorCode::NotJoined, Some(1))
    );
    assert_eq!(
        messages_for(&answer.events, "rbx-2"),
        [ServerMessage::Ack { id: 2 }]
    );
    assert_still_answers(&mut new, "rbx-1", 3).await;
}

// ---------------------------------------------------------------------------------------------
// A quest through a channel.

/// Pim's tale from the greeting to the payout, under ids from `first`.
fn pims_tale(first: u64) -> Vec<ClientMessage> {
    vec![
        choose("PimsTideTale_Greet_r1", first),
        action(ActionType::AcceptQuest, PIMS_QUEST, first + 1),
        advance("PimsTideTale_Tale", first + 2),
        action(ActionType::AdvanceObjective, PIMS_OBJECTIVE, first + 3),
        advance("PimsTideTale_Ending", first + 4),
        action(ActionType::CompleteQuest, PIMS_QUEST, first + 5),
    ]
}

/// The coins of `player`'s `welcome` among `events`.
fn welcome_coins(events: &[Event<ServerMessage>], player: &str) -> i64 {
    messages_for(events, player)
        .into_iter()
        .find_map(|m| match m {
            ServerMessage::Welcome { profile, .. } => Some(profile.coins),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no welcome for {player}"))
}

async fn a_quest_accepted_and_paid_through_a_channel_pays_each_player_once(backend: Backend) {
    let server = server_on(backend).await;
    let (_, mut channel) = game(&server).await;
    let players = ["rbx-quest-1", "rbx-quest-2"];
    let answer = channel
        .batch(
            players.iter().map(|p| placed(p, NEAR_PIM)).collect(),
            players
                .iter()
                .flat_map(|p| [join(p), message(p, talk("Pim", 1))])
                .collect(),
        )
        .await;
    let before: Vec<i64> = players
        .iter()
        .map(|p| welcome_coins(&answer.events, p))
        .collect();
    // Both players' steps, interleaved, in one batch.
    let steps: Vec<Value> = pims_tale(2)
        .into_iter()
        .flat_map(|step| players.map(|p| message(p, step.clone())))
        .collect();
    let paid = channel.batch(vec![], steps).await;
    let mut rewards = Vec::new();
    for player in players {
        let said = messages_for(&paid.events, player);
        for id in 2..=7 {
            assert!(
                said.contains(&ServerMessage::Ack { id }),
                "{player}: no ack {id}: {said:?}"
            );
        }
        let completed: Vec<i64> = said
            .iter()
            .filter_map(|m| match m {
                ServerMessage::Effect {
                    effect: Effect::QuestCompleted { quest, coins, .. },
                    ..
                } if quest == PIMS_QUEST => Some(*coins),
                _ => None,
            })
            .collect();
        assert_eq!(completed.len(), 1, "{player}: {said:?}");
        assert!(completed[0] > 0);
        rewards.push(completed[0]);
    }
    // The answer was lost: the batch again. Its answer is the same; nothing is paid again.
    assert_eq!(channel.retry().await, paid);
    assert_eq!(channel.retry().await, paid);

    // The profiles the store holds now: a fresh session of each player.
    channel
        .batch(vec![], players.iter().map(|p| leave(p)).collect())
        .await;
    let answer = channel
        .batch(vec![], players.iter().map(|p| join(p)).collect())
        .await;
    for (i, player) in players.iter().enumerate() {
        assert_eq!(
            welcome_coins(&answer.events, player),
            before[i] + rewards[i],
            "{player} paid once"
        );
    }
    // And the quest cannot be paid again: Pim now opens on his completed line.
    let answer = channel
        .batch(
            players.iter().map(|p| placed(p, NEAR_PIM)).collect(),
            players
                .iter()
                .map(|p| message(p, talk("Pim", 20)))
                .collect(),
        )
        .await;
    for player in players {
        let opened = messages_for(&answer.events, player)
            .into_iter()
            .find_map(|m| match m {
                ServerMessage::Opened { facts, .. } => Some(facts),
                _ => None,
            })
            .unwrap_or_else(|| panic!("{player}: no opened"));
        assert_eq!(
            opened.quests.get(PIMS_QUEST),
            Some(&banter_protocol::QuestStatus::Completed),
            "{player}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// 16.5 How a channel ends.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_channel_ends_and_later_requests_are_unknown_channel() {
    let (server, mut channel) = server_with_channel().await;
    channel.batch(vec![], vec![join("rbx-1")]).await;
    let (status, body) = channel.delete().await;
    assert_eq!(status, 204, "{body}");
    assert_eq!(body, Value::String(String::new()));
    let body = channel.next_body(vec![], vec![join("rbx-2")], 0);
    let unknown = (404, "unknown_channel");
    assert_refused(channel.post(&body).await, unknown, "a batch");
    assert_refused(channel.delete().await, unknown, "a second delete");
    // Its players left: each may connect on their own.
    connect_once_released(&server, "rbx-1").await.close().await;
}

async fn an_idle_channel_ends_and_its_open_conversation_resumes_on_a_new_channel(backend: Backend) {
    let server = TestServer::start_on_with(backend, |c| {
        c.world.talk_cooldown = Duration::ZERO;
        c.channel_idle_timeout = Duration::from_secs(1);
    })
    .await;
    let (credential, mut channel) = game(&server).await;
    assert_eq!(channel.limits["idle_timeout_ms"], 1000);
    let events = talking_to_pim(&mut channel, "rbx-idle-1").await;
    let resume_token = welcome_token(&events, "rbx-idle-1");

    // A long-poll longer than the idle timeout: the channel's end answers it.
    let started = Instant::now();
    let answer = channel.batch_waiting(vec![], vec![], 10_000).await;
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(900), "{took:?}: {answer:?}");
    assert!(
        took < Duration::from_secs(10),
        "the end did not answer it: {took:?}"
    );
    assert_eq!(answer.events, vec![]);
    let body = channel.next_body(vec![], vec![], 0);
    let (status, answer) = channel.post(&body).await;
    assert_eq!(
        (status, code(&answer)),
        (404, "unknown_channel"),
        "{answer}"
    );

    // A new channel, the player joined again and resumed with its last welcome's token.
    let mut channel = server.open_channel(&credential).await;
    let answer = channel
        .batch(
            vec![placed("rbx-idle-1", NEAR_PIM)],
            vec![
                join("rbx-idle-1"),
                message(
                    "rbx-idle-1",
                    ClientMessage::Resume {
                        id: Some(1),
                        token: resume_token,
                    },
                ),
            ],
        )
        .await;
    match messages_for(&answer.events, "rbx-idle-1").as_slice() {
        [
            ServerMessage::Welcome { .. },
            ServerMessage::Resumed { conversation, .. },
            ServerMessage::Ack { id: 1 },
        ] => assert_eq!(conversation, "Pim"),
        other => panic!("expected welcome, resumed, ack: {other:?}"),
    }
    // The conversation goes on where it was.
    let answer = channel
        .batch(
            vec![],
            vec![message("rbx-idle-1", choose("PimsTideTale_Greet_r1", 2))],
        )
        .await;
    assert!(
        acked(&answer.events, "rbx-idle-1", 2),
        "{:?}",
        answer.events
    );
}

// ---------------------------------------------------------------------------------------------
// 16.6 The same over one WebSocket.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_channel_websocket_opens_with_the_open_answer_and_answers_frames_with_events() {
    let server = server().await;
    let (_, mut socket) = game_socket(&server).await;
    let opened = socket.recv_json().await;
    assert!(
        opened["channel"]
            .as_str()
            .is_some_and(|c| c.starts_with("ch_")),
        "{opened}"
    );
    assert_eq!(opened["limits"]["max_request_bytes"], 1_048_576);

    let events = socket_talking_to_pim(&mut socket, "rbx-1").await;
    let numbers: Vec<u64> = events.iter().map(|e| e.n).collect();
    assert_eq!(numbers, [1, 2, 3]);
    assert!(matches!(
        messages_for(&events, "rbx-1").as_slice(),
        [
            ServerMessage::Welcome { .. },
            ServerMessage::Opened { .. },
            ServerMessage::Ack { id: 1 }
        ]
    ));
    // Refusals per player, as over HTTP; the numbering goes on.
    socket
        .send_batch(
            vec![],
            vec![join("steam_1"), message("rbx-2", talk("Pim", 5))],
        )
        .await;
    let events = socket
        .events_until(|e| e.iter().any(|e| e.player == "rbx-2"))
        .await;
    assert_eq!(the_error(&events, "steam_1"), (ErrorCode::NotInScope, None));
    assert_eq!(the_error(&events, "rbx-2"), (ErrorCode::NotJoined, Some(5)));
    assert_eq!(events.iter().map(|e| e.n).collect::<Vec<_>>(), [4, 5]);

    // The player's own WebSocket is refused while the channel socket carries it.
    let token = server.player_token("rbx-1");
    assert_eq!(
        refused_upgrade(server.connect_raw(&token).await).map(|(s, _)| s),
        Some(409)
    );
    // The channel ends with its socket: its players are released.
    socket.client.close().await;
    connect_once_released(&server, "rbx-1").await.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frame_a_channel_websocket_cannot_read_is_refused_and_the_channel_stays() {
    let server = server().await;
    let (_, mut socket) = game_socket(&server).await;
    socket.recv_json().await;
    socket.send_batch(vec![], vec![join("rbx-1")]).await;
    socket.events_until(|e| !e.is_empty()).await;
    let ok = join("rbx-2");
    for (frame, place) in [
        ("not json".to_owned(), ""),
        (json!({"seq": 1, "items": []}).to_string(), "seq"),
        (
            json!({"items": [ok, {"player": "rbx-2", "leave": true, "join": {}}]}).to_string(),
            "items[1]",
        ),
        (
            json!({"items": [ok, {"player": "rbx 2", "join": {}}]}).to_string(),
            "items[1].player",
        ),
    ] {
        socket.send_text(&frame).await;
        let refused = socket.recv_json().await;
        assert_eq!(code(&refused), "bad_request", "{frame}: {refused}");
        assert!(said(&refused).contains(place), "{frame}: {refused}");
        let fields: Vec<&String> = refused.as_object().expect("an object").keys().collect();
        assert_eq!(fields, ["error", "message"], "{refused}");
    }
    // Nothing of them was applied, and the channel is still there.
    socket
        .send_batch(
            vec![],
            vec![
                join("rbx-2"),
                message(
                    "rbx-1",
                    ClientMessage::SetAfk {
                        id: Some(1),
                        afk: true,
                    },
                ),
            ],
        )
        .await;
    let events = socket.events_until(|e| acked(e, "rbx-1", 1)).await;
    assert_welcomed(&events, "rbx-2");
    assert_eq!(events.iter().map(|e| e.n).collect::<Vec<_>>(), [2, 3]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revoking_the_credential_closes_its_channel_websocket_with_1008() {
    let server = server().await;
    let (credential, mut socket) = game_socket(&server).await;
    socket.recv_json().await;
    let events = socket_talking_to_pim(&mut socket, "rbx-1").await;
    let resume_token = welcome_token(&events, "rbx-1");

    server.revoke_credential(&credential.id).await;
    let frames = socket.client.until_eof().await;
    let texts: Vec<Value> = frames
        .iter()
        .filter_map(|f| match f {
            Message::Text(text) => Some(serde_json::from_str(text.as_str()).expect("JSON")),
            _ => None,
        })
        .collect();
    let last = texts.last().expect("an error frame");
    assert_eq!(code(last), "unauthorized", "{texts:?}");
    match frames.last() {
        Some(Message::Close(Some(close))) => assert_eq!(u16::from(close.code), 1008),
        other => panic!("expected a Close 1008 last, got {other:?}"),
    }
    // The player's conversation was parked, as for a dropped connection.
    let mut client = connect_once_released(&server, "rbx-1").await;
    client.move_to(NEAR_PIM).await.expect("spawned");
    let resumed = client.resume(&resume_token).await.expect("resumed");
    assert_eq!(resumed.resumed().map(|(c, _)| c), Some("Pim"));
}

on_both_backends!(
    credentials_are_shown_once_listed_oldest_first_and_revoked_idempotently,
    revoking_a_credential_ends_its_channels_at_once_and_parks_their_conversations,
    a_quest_accepted_and_paid_through_a_channel_pays_each_player_once,
    an_idle_channel_ends_and_its_open_conversation_resumes_on_a_new_channel,
);

/// PROTOCOL.md section 14: a body sent without `Content-Type: application/json` is one the
/// endpoint cannot read (`400`); section 16.3 names the content type with the batch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_without_a_json_content_type_is_400() {
    let server = server().await;
    let (_, channel) = game(&server).await;
    let auth = format!("Bearer {}", channel.credential);
    let body = json!({"seq": 1, "items": [join("rbx-1")]}).to_string();
    for content_type in [None, Some("text/plain")] {
        let mut headers = vec![("Authorization", auth.as_str())];
        headers.extend(content_type.map(|c| ("Content-Type", c)));
        let (status, answer) =
            json_answer(server.http("POST", &channel.path(), &headers, &body).await);
        assert_eq!(
            (status, code(&answer)),
            (400, "bad_request"),
            "{content_type:?}: {answer}"
        );
    }
}

/// The store holds the carried rule, so it holds across instances sharing the database: on an
/// instance that does not hold the channel, another credential's join is `carried_elsewhere`, and
/// the player's own WebSocket is upgraded, then told `carried_elsewhere` and closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_another_instance_a_channel_carried_player_is_refused_too() {
    let first = server_on(Backend::Postgres).await;
    let second = first.another_instance().await;
    // Claims are announced database-wide on PostgreSQL: a player of this test alone.
    let player = format!("rbx-x{}", std::process::id());
    let (_, mut ours) = game(&first).await;
    ours.batch(vec![], vec![join(&player)]).await;

    let other = second.issue_credential("seaside-us", &["rbx-"]).await;
    let mut theirs = second.open_channel(&other).await;
    let answer = theirs.batch(vec![], vec![join(&player)]).await;
    assert_eq!(
        the_error(&answer.events, &player),
        (ErrorCode::CarriedElsewhere, None)
    );

    let token = second.player_token(&player);
    let mut direct = second
        .connect_raw(&token)
        .await
        .expect("another instance upgrades: its hub does not know the channel");
    assert_eq!(
        direct.recv_error().await,
        (ErrorCode::CarriedElsewhere, None)
    );
    assert_still_answers(&mut ours, &player, 1).await;
}
