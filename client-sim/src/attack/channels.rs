//! Cheats through game-server channels (docs/PROTOCOL.md section 16): a game server speaking for
//! a player outside its credential's scope, replayed, older and skipped batches, a revoked
//! credential, a channel player's own client moving it or connecting directly, two credentials
//! claiming one player, and oversized and malformed batches.
//!
//! Each is played by a [`Rig`], a game server the catalogue controls batch by batch, on a
//! player of its own, and judged like the rest of the catalogue: by the answer (an `error`
//! event's code, or the HTTP status and its JSON error's code) and by the player's facts, as the
//! server reports them when the player talks to Pim again, which must be what they were before
//! the cheat. **A replayed batch** is judged by the state it leaves: the batch that completed
//! Pim's quest, sent again with the same `seq`, must cause no new event, and the player must
//! have been paid once.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use banter_client::channel::{ApiRefusal, AwaitedAnswer, BatchOutcome};
use banter_protocol::channel::{Batch, Item, Placed};
use banter_protocol::{ActionType, ClientMessage, Effect, ErrorCode, Position, ServerMessage};
use tokio::time::Instant;

use super::cheater::{Cheat, CheatFuture, Observed, action_message, advance, choose, outcome};
use super::{AttackOptions, Outcome, PIM, PIM_OBJECTIVE, PIM_QUEST};
use crate::auth;
use crate::connection::{Connection, Reply};
use crate::error::{Result, SimError};
use crate::facts::{ClientFacts, Snapshot};
use crate::http::Http;
use crate::session::TALK_COOLDOWN;
use crate::world::stand_spot;

/// How many empty batches a rig sends waiting for an answer that was not in its batch's.
const POLLS: usize = 10;

/// A game server the catalogue controls batch by batch: its credential, its channel, the last
/// `seq` the server applied and the last event seen; and the facts of each player it carries.
struct Rig {
    options: Arc<AttackOptions>,
    http: Http,
    /// The credential's id (`gs_...`), to revoke it.
    id: String,
    credential: String,
    channel: String,
    applied: u64,
    seen: u64,
    players: HashMap<String, Carried>,
}

/// What a rig knows of one of its players.
struct Carried {
    next_id: u64,
    facts: ClientFacts,
    last_talk: Option<Instant>,
}

impl Carried {
    /// A player the rig has sent nothing for yet.
    fn fresh(options: &AttackOptions) -> Carried {
        Carried {
            next_id: 0,
            facts: ClientFacts::fresh(&options.content),
            last_talk: None,
        }
    }
}

impl Rig {
    /// Issues a credential for `prefixes` and opens a channel with it.
    async fn new(options: &Arc<AttackOptions>, tag: &str, prefixes: &[String]) -> Result<Rig> {
        let http = Http::new(options.endpoint.clone())?;
        let name = format!("sim-attack-{}-{tag}", options.run_id);
        let issued = http
            .issue_game_server(&options.service_key, &name, prefixes)
            .await?;
        let opened = http.open_channel(&issued.credential).await?;
        Ok(Rig {
            options: options.clone(),
            http,
            id: issued.id,
            credential: issued.credential,
            channel: opened.channel,
            applied: 0,
            seen: 0,
            players: HashMap::new(),
        })
    }

    /// The next batch's JSON: `seq` one past the last applied, everything seen acknowledged.
    fn next_batch(
        &self,
        positions: Vec<Placed>,
        items: Vec<Item<ClientMessage>>,
        wait_ms: u64,
    ) -> Batch<ClientMessage> {
        Batch {
            seq: self.applied + 1,
            ack: self.seen,
            wait_ms,
            positions,
            items,
            parties: Vec::new(),
        }
    }

    /// Posts a body as it is; a `200`'s events are taken in (numbers seen before dropped) and
    /// its `seq` counted as applied.
    async fn post_text(
        &mut self,
        body: &str,
    ) -> Result<(BatchOutcome, Vec<(u64, String, ServerMessage)>)> {
        let (status, text) = self
            .http
            .post_batch_text(&self.credential, &self.channel, body)
            .await?;
        let outcome = banter_client::channel::read_batch_answer(&self.channel, status, text)?;
        let mut fresh = Vec::new();
        if let BatchOutcome::Answered(answer) = &outcome {
            self.applied = self.applied.max(answer.seq);
            for event in &answer.events {
                if event.n > self.seen {
                    self.seen = event.n;
                    fresh.push((event.n, event.player.clone(), event.message.clone()));
                }
            }
            for (_, player, message) in &fresh {
                self.absorb(player, message);
            }
        }
        Ok((outcome, fresh))
    }

    /// Keeps a player's facts current from its events.
    fn absorb(&mut self, player: &str, message: &ServerMessage) {
        let content = self.options.content.clone();
        let Some(carried) = self.players.get_mut(player) else {
            return;
        };
        match message {
            ServerMessage::Welcome { profile, .. } => carried.facts.set_profile(profile),
            ServerMessage::Effect {
                effect, profile, ..
            } => carried.facts.apply(&content, effect, profile),
            ServerMessage::Opened { facts, .. } => carried.facts.opened(&content, facts),
            _ => {}
        }
    }

    /// Posts the next batch, held up to `wait_ms` for an event; what it caused for `player`
    /// (any other status than `200` is an error).
    async fn post_for(
        &mut self,
        player: &str,
        positions: Vec<Placed>,
        items: Vec<Item<ClientMessage>>,
        wait_ms: u64,
    ) -> Result<Vec<ServerMessage>> {
        let body = to_json(&self.next_batch(positions, items, wait_ms))?;
        let (outcome, fresh) = self.post_text(&body).await?;
        if let BatchOutcome::Refused { status, body, .. } = outcome {
            return Err(SimError::Http {
                path: banter_client::channel::batch_path(&self.channel),
                status,
                body,
            });
        }
        Ok(fresh
            .into_iter()
            .filter(|(_, p, _)| p == player)
            .map(|(_, _, m)| m)
            .collect())
    }

    /// Posts the next batch at once; `player`'s events.
    async fn batch(
        &mut self,
        player: &str,
        positions: Vec<Placed>,
        items: Vec<Item<ClientMessage>>,
    ) -> Result<Vec<ServerMessage>> {
        self.post_for(player, positions, items, 0).await
    }

    /// An empty batch that waits up to a second for an event; `player`'s events.
    async fn poll(&mut self, player: &str) -> Result<Vec<ServerMessage>> {
        self.post_for(player, Vec::new(), Vec::new(), 1000).await
    }

    /// Posts a body as it is: what its answer says.
    async fn post_outcome(&mut self, body: &str) -> Result<Outcome> {
        Ok(http_outcome(&self.post_text(body).await?.0))
    }

    /// Joins `player`: its `welcome`, or the refusal's code.
    async fn join(&mut self, player: &str) -> Result<std::result::Result<(), ErrorCode>> {
        self.players
            .insert(player.to_owned(), Carried::fresh(&self.options));
        let mut events = self
            .batch(player, Vec::new(), vec![Item::join(player, None)])
            .await?;
        for _ in 0..POLLS {
            for event in &events {
                match event {
                    ServerMessage::Welcome { .. } => return Ok(Ok(())),
                    ServerMessage::Error { code, .. } => return Ok(Err(*code)),
                    _ => {}
                }
            }
            events = self.poll(player).await?;
        }
        Err(SimError::Other(format!("no answer to {player}'s join")))
    }

    /// Joins `player`, which must be welcomed.
    async fn join_honestly(&mut self, player: &str) -> Result<()> {
        match self.join(player).await? {
            Ok(()) => Ok(()),
            Err(code) => Err(SimError::Other(format!(
                "an honest join of {player} refused: {}",
                code.name()
            ))),
        }
    }

    /// Places `player` (the engine's position); its events.
    async fn place(&mut self, player: &str, position: Position) -> Result<Vec<ServerMessage>> {
        let placed = Placed {
            player: player.to_owned(),
            position,
        };
        self.batch(player, vec![placed], Vec::new()).await
    }

    /// The item of `player`'s next message, with a fresh id.
    fn item(&mut self, player: &str, message: ClientMessage) -> (u64, Item<ClientMessage>) {
        let carried = self
            .players
            .entry(player.to_owned())
            .or_insert_with(|| Carried::fresh(&self.options));
        carried.next_id += 1;
        let id = carried.next_id;
        (id, Item::message(player, message.with_id(id)))
    }

    /// Sends one message for `player` and collects its events up to the answer.
    async fn send(&mut self, player: &str, message: ClientMessage) -> Result<Reply> {
        let started = std::time::Instant::now();
        let (id, item) = self.item(player, message);
        let mut events = self.batch(player, Vec::new(), vec![item]).await?;
        let mut awaited = AwaitedAnswer::new(id, started);
        for _ in 0..POLLS {
            for event in events {
                if let Some(reply) = awaited.take(event)? {
                    return Ok(reply);
                }
            }
            events = self.poll(player).await?;
        }
        Err(SimError::Timeout(Duration::from_secs(POLLS as u64)))
    }

    /// An honest message that must be accepted.
    async fn honest(&mut self, player: &str, message: ClientMessage) -> Result<Reply> {
        let kind = message.kind();
        let reply = self.send(player, message).await?;
        match &reply.answer {
            Ok(()) => Ok(reply),
            Err(r) => Err(SimError::Other(format!(
                "honest {kind} refused: {}",
                r.code.name()
            ))),
        }
    }

    /// Talks to Pim (after the cooldown); the reply.
    async fn talk_to_pim(&mut self, player: &str) -> Result<Reply> {
        let pim = self.pim()?;
        if let Some(last) = self.players.get(player).and_then(|c| c.last_talk) {
            tokio::time::sleep_until(last + TALK_COOLDOWN).await;
        }
        let reply = self
            .send(
                player,
                ClientMessage::Talk {
                    id: None,
                    npc: pim.name.clone(),
                    instance: Some(PIM.to_owned()),
                    cached: None,
                },
            )
            .await?;
        if reply.answer.is_ok()
            && let Some(carried) = self.players.get_mut(player)
        {
            carried.last_talk = Some(Instant::now());
        }
        Ok(reply)
    }

    fn pim(&self) -> Result<banter_dialogue::content::NpcDef> {
        self.options
            .content
            .npc(PIM)
            .cloned()
            .ok_or_else(|| SimError::Content(format!("the content has no NPC `{PIM}`")))
    }

    /// Joins `player`, places it by Pim and opens his conversation (kept open).
    async fn open_pim(&mut self, player: &str) -> Result<()> {
        let spot = stand_spot(&self.pim()?);
        self.place(player, spot).await?;
        let reply = self.talk_to_pim(player).await?;
        if let Err(refusal) = &reply.answer {
            return Err(SimError::Other(format!(
                "an honest talk to Pim refused: {}",
                refusal.code.name()
            )));
        }
        let content = self.options.content.clone();
        if let Some(carried) = self.players.get_mut(player) {
            for message in &reply.messages {
                if let ServerMessage::Opened { facts, .. } = message {
                    carried.facts.opened(&content, facts);
                }
            }
        }
        Ok(())
    }

    /// A new player of the rig: joined, by Pim, his greeting on screen.
    async fn at_pim(&mut self, player: &str) -> Result<()> {
        self.join_honestly(player).await?;
        self.open_pim(player).await
    }

    /// At Pim's greeting, says yes: his `AcceptQuest` is armed, not yet sent.
    async fn armed_accept(&mut self, player: &str) -> Result<()> {
        self.at_pim(player).await?;
        self.honest(player, choose("PimsTideTale_Greet_r1")).await?;
        Ok(())
    }

    fn snapshot(&self, player: &str) -> Result<Snapshot> {
        self.players
            .get(player)
            .map(|c| c.facts.snapshot())
            .ok_or_else(|| SimError::Other(format!("{player} is not on the rig")))
    }

    /// What the server says the player's facts are now: close whatever is open and talk to Pim
    /// again from where the player stands (a body moved away cannot).
    async fn server_facts(&mut self, player: &str) -> Result<Snapshot> {
        let _ = self.send(player, ClientMessage::Close { id: None }).await?;
        let reply = self.talk_to_pim(player).await?;
        if let Err(refusal) = &reply.answer {
            return Err(SimError::Other(format!(
                "talking to Pim again refused: {}",
                refusal.code.name()
            )));
        }
        let sheet = reply
            .messages
            .iter()
            .find_map(|m| match m {
                ServerMessage::Opened { facts, .. } => Some(facts),
                _ => None,
            })
            .ok_or_else(|| SimError::Other("talking to Pim opened nothing".to_owned()))?;
        let content = &self.options.content;
        let mut told = ClientFacts::fresh(content);
        told.opened(content, sheet);
        let facts = told.snapshot();
        let _ = self.send(player, ClientMessage::Close { id: None }).await?;
        Ok(facts)
    }

    /// Ends the channel (its players leave).
    async fn close(&self) {
        let _ = self
            .http
            .close_channel(&self.credential, &self.channel)
            .await;
    }

    /// Ends a cheat on `player`: what the server says its facts are after it, then the channel
    /// closed.
    async fn observe(mut self, player: &str, got: Outcome, before: Snapshot) -> Result<Observed> {
        let after = self.server_facts(player).await;
        self.close().await;
        Ok(Observed { got, before, after })
    }
}

/// A player id under a rig's prefix.
fn player_of(prefix: &str) -> String {
    format!("{prefix}p")
}

/// A run-unique scope prefix for `tag`.
fn prefix(options: &AttackOptions, tag: &str) -> String {
    format!("ch-{}-{tag}-", options.run_id)
}

/// A rig of its own for cheat `tag`, with one player.
async fn rig(options: &Arc<AttackOptions>, tag: &str) -> Result<(Rig, String)> {
    let prefix = prefix(options, tag);
    let rig = Rig::new(options, tag, std::slice::from_ref(&prefix)).await?;
    Ok((rig, player_of(&prefix)))
}

/// A rig of its own for cheat `tag`, its player by Pim with nothing open, and the player's facts
/// before the cheat.
async fn rig_after_pim(options: &Arc<AttackOptions>, tag: &str) -> Result<(Rig, String, Snapshot)> {
    let (mut rig, player) = rig(options, tag).await?;
    rig.at_pim(&player).await?;
    rig.honest(&player, ClientMessage::Close { id: None })
        .await?;
    let before = rig.snapshot(&player)?;
    Ok((rig, player, before))
}

/// What an HTTP batch's answer says: `Http(200)` when it was answered, else its refusal's.
fn http_outcome(outcome: &BatchOutcome) -> Outcome {
    match outcome {
        BatchOutcome::Answered(_) => Outcome::Http(200),
        BatchOutcome::Refused {
            status, refusal, ..
        } => refused_outcome(*status, refusal),
    }
}

/// What a refused HTTP request says: its status and its JSON error's code (the status alone
/// when the body is not the JSON error).
fn refused_outcome(status: u16, refusal: &ApiRefusal) -> Outcome {
    if refusal.error.is_empty() {
        Outcome::Http(status)
    } else {
        Outcome::HttpError(status, refusal.error.clone())
    }
}

/// The item that would take Pim's quest, armed by the rig's honest steps.
fn accept_item(rig: &mut Rig, player: &str) -> Item<ClientMessage> {
    rig.item(player, action_message(ActionType::AcceptQuest, PIM_QUEST))
        .1
}

/// The next batch, carrying only the item that would take Pim's quest.
fn accept_batch(rig: &mut Rig, player: &str) -> Batch<ClientMessage> {
    let item = accept_item(rig, player);
    rig.next_batch(Vec::new(), vec![item], 0)
}

/// A cheat on a player with Pim's `AcceptQuest` armed: `cheat` sends a batch whose
/// `AcceptQuest` must not be applied, and says what the server answered.
fn with_accept_armed<F>(options: &Arc<AttackOptions>, tag: &'static str, cheat: F) -> CheatFuture
where
    F: for<'a> FnOnce(&'a mut Rig, &'a str) -> futures_util::future::BoxFuture<'a, Result<Outcome>>
        + Send
        + 'static,
{
    let options = options.clone();
    Box::pin(async move {
        let (mut rig, player) = rig(&options, tag).await?;
        rig.armed_accept(&player).await?;
        let before = rig.snapshot(&player)?;
        let got = cheat(&mut rig, &player).await?;
        rig.observe(&player, got, before).await
    })
}

/// A batch with Pim's armed `AcceptQuest` numbered `seq(applied)` instead of one past the last
/// applied `seq`.
fn with_seq(options: &Arc<AttackOptions>, tag: &'static str, seq: fn(u64) -> u64) -> CheatFuture {
    with_accept_armed(options, tag, move |rig, player| {
        Box::pin(async move {
            let mut batch = accept_batch(rig, player);
            batch.seq = seq(rig.applied);
            rig.post_outcome(&to_json(&batch)?).await
        })
    })
}

pub(super) fn cheats(options: &Arc<AttackOptions>) -> Vec<Cheat> {
    vec![
        Cheat {
            name: "channel: speaking for a player outside the scope",
            expected: Outcome::Code(ErrorCode::NotInScope),
            run: out_of_scope(options),
        },
        Cheat {
            name: "channel: batch replayed (same seq) after it paid",
            expected: Outcome::State {
                held: true,
                seen: "no new event; paid once".to_owned(),
            },
            run: replayed(options),
        },
        Cheat {
            name: "channel: older batch (reordered)",
            expected: Outcome::HttpError(409, "stale_batch".to_owned()),
            run: with_seq(options, "stale", |applied| applied - 1),
        },
        Cheat {
            name: "channel: batch skipping a seq",
            expected: Outcome::HttpError(409, "batch_gap".to_owned()),
            run: with_seq(options, "gap", |applied| applied + 2),
        },
        Cheat {
            name: "channel: batch after its credential was revoked",
            expected: Outcome::HttpError(401, "unauthorized".to_owned()),
            run: revoked(options),
        },
        Cheat {
            name: "channel: a player's move (the game server places it)",
            expected: Outcome::Code(ErrorCode::PositionOwned),
            run: move_item(options),
        },
        Cheat {
            name: "channel: a channel player's own WebSocket",
            expected: Outcome::HttpError(409, "carried_elsewhere".to_owned()),
            run: direct_socket(options),
        },
        Cheat {
            name: "channel: a second credential's channel joins the player",
            expected: Outcome::Code(ErrorCode::CarriedElsewhere),
            run: two_channels(options),
        },
        Cheat {
            name: "channel: oversized batch",
            expected: Outcome::HttpError(413, "payload_too_large".to_owned()),
            run: with_accept_armed(options, "oversized", |rig, player| {
                Box::pin(async move {
                    // Well-formed JSON, padded past the limit with trailing whitespace.
                    let mut body = to_json(&accept_batch(rig, player))?;
                    body.push_str(&" ".repeat(banter_protocol::channel::MAX_REQUEST_BYTES + 1));
                    rig.post_outcome(&body).await
                })
            }),
        },
        Cheat {
            name: "channel: malformed batch (a good item, then a bad one)",
            expected: Outcome::HttpError(400, "bad_request".to_owned()),
            run: with_accept_armed(options, "malformed", |rig, player| {
                Box::pin(async move {
                    let batch = accept_batch(rig, player);
                    let mut body: serde_json::Value =
                        serde_json::to_value(&batch).map_err(|e| SimError::Other(e.to_string()))?;
                    // An item asking for two things at once: the whole batch is refused.
                    if let Some(items) = body["items"].as_array_mut() {
                        items
                            .push(serde_json::json!({"player": player, "join": {}, "leave": true}));
                    }
                    rig.post_outcome(&body.to_string()).await
                })
            }),
        },
    ]
}

fn to_json(batch: &Batch<ClientMessage>) -> Result<String> {
    serde_json::to_string(batch).map_err(|e| SimError::Other(e.to_string()))
}

/// A victim carried by its own game server; another game server, whose scope does not cover
/// it, places it far away, joins it and sends its armed-looking `AcceptQuest`.
fn out_of_scope(options: &Arc<AttackOptions>) -> CheatFuture {
    let options = options.clone();
    Box::pin(async move {
        let (home, victim, before) = rig_after_pim(&options, "scope-home").await?;

        let (mut other, _) = rig(&options, "scope-other").await?;
        let far = Placed {
            player: victim.clone(),
            position: [0.0, 2.0, 0.0],
        };
        let accept = accept_item(&mut other, &victim);
        let events = other
            .batch(
                &victim,
                vec![far],
                vec![Item::join(victim.clone(), None), accept],
            )
            .await?;
        // Refused: every event for the victim an error, the first (its position) not_in_scope.
        let got = if events
            .iter()
            .any(|e| !matches!(e, ServerMessage::Error { .. }))
        {
            Outcome::Accepted
        } else {
            match events.first() {
                Some(ServerMessage::Error { code, .. }) => Outcome::Code(*code),
                _ => Outcome::Failed("no answer for the victim".to_owned()),
            }
        };
        let joined_refused = events.iter().filter(|e| {
            matches!(
                e,
                ServerMessage::Error {
                    code: ErrorCode::NotInScope,
                    ..
                }
            )
        });
        let got = if got == Outcome::Code(ErrorCode::NotInScope) && joined_refused.count() < 2 {
            Outcome::Failed(format!(
                "the join was not refused as not_in_scope: {events:?}"
            ))
        } else {
            got
        };
        other.close().await;
        // Talked to from where the home game server placed it: the far position did not hold.
        home.observe(&victim, got, before).await
    })
}

/// Plays Pim's tale to the batch that completes it, then sends that batch again.
fn replayed(options: &Arc<AttackOptions>) -> CheatFuture {
    let options = options.clone();
    Box::pin(async move {
        let (mut rig, player) = rig(&options, "replay").await?;
        rig.at_pim(&player).await?;
        rig.honest(&player, choose("PimsTideTale_Greet_r1")).await?;
        rig.honest(&player, action_message(ActionType::AcceptQuest, PIM_QUEST))
            .await?;
        rig.honest(&player, advance("PimsTideTale_Tale")).await?;
        rig.honest(
            &player,
            action_message(ActionType::AdvanceObjective, PIM_OBJECTIVE),
        )
        .await?;
        rig.honest(&player, advance("PimsTideTale_Ending")).await?;

        // The paying batch, kept as it went.
        let (_, complete) = rig.item(
            &player,
            action_message(ActionType::CompleteQuest, PIM_QUEST),
        );
        let body = to_json(&rig.next_batch(Vec::new(), vec![complete], 0))?;
        let (outcome, fresh) = rig.post_text(&body).await?;
        let paid = |events: &[(u64, String, ServerMessage)]| {
            events
                .iter()
                .filter(|(_, p, m)| {
                    p == &player
                        && matches!(
                            m,
                            ServerMessage::Effect {
                                effect: Effect::QuestCompleted { .. },
                                ..
                            }
                        )
                })
                .count()
        };
        if !matches!(outcome, BatchOutcome::Answered(_)) || paid(&fresh) != 1 {
            return Err(SimError::Other(format!(
                "the honest CompleteQuest did not pay once: {}",
                http_outcome(&outcome)
            )));
        }
        let before = rig.snapshot(&player)?;

        // The same body again: the same seq, the same ack.
        let (again, new_events) = rig.post_text(&body).await?;
        let answered_again = match &again {
            BatchOutcome::Answered(a) => a.events.len(),
            _ => 0,
        };
        let held = matches!(again, BatchOutcome::Answered(_)) && new_events.is_empty();
        let seen = format!(
            "{}: {} new events ({} paid), {answered_again} events answered again",
            http_outcome(&again),
            new_events.len(),
            paid(&new_events),
        );
        rig.observe(&player, Outcome::State { held, seen }, before)
            .await
    })
}

/// Revokes the rig's credential, then sends its armed `AcceptQuest`; the facts are read by
/// another game server whose scope covers the player.
fn revoked(options: &Arc<AttackOptions>) -> CheatFuture {
    let options = options.clone();
    Box::pin(async move {
        let (mut rig, player) = rig(&options, "revoked").await?;
        rig.armed_accept(&player).await?;
        let before = rig.snapshot(&player)?;
        rig.http
            .revoke_game_server(&options.service_key, &rig.id)
            .await?;
        let body = to_json(&accept_batch(&mut rig, &player))?;
        let got = rig.post_outcome(&body).await?;

        let after = async {
            let mut judge =
                Rig::new(&options, "revoked-judge", &[prefix(&options, "revoked")]).await?;
            // The revoked channel's end releases the player on its own time.
            let mut joined = judge.join(&player).await?;
            for _ in 0..20 {
                if joined != Err(ErrorCode::CarriedElsewhere) {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
                joined = judge.join(&player).await?;
            }
            if let Err(code) = joined {
                return Err(SimError::Other(format!(
                    "the judge's join: {}",
                    code.name()
                )));
            }
            let spot = stand_spot(&judge.pim()?);
            judge.place(&player, spot).await?;
            // The cooldown is the player's, whoever carries it: the cheat's talk counts.
            tokio::time::sleep(TALK_COOLDOWN).await;
            let facts = judge.server_facts(&player).await;
            judge.close().await;
            facts
        }
        .await;
        Ok(Observed { got, before, after })
    })
}

/// A `move` item for a channel player, far from Pim.
fn move_item(options: &Arc<AttackOptions>) -> CheatFuture {
    let options = options.clone();
    Box::pin(async move {
        let (mut rig, player, before) = rig_after_pim(&options, "move").await?;
        let reply = rig
            .send(
                &player,
                ClientMessage::Move {
                    id: None,
                    position: [0.0, 2.0, 0.0],
                },
            )
            .await?;
        // Talked to from where the rig placed it: the move did not hold.
        rig.observe(&player, outcome(&reply), before).await
    })
}

/// The player's own client connects directly (a valid token) while a channel carries it.
fn direct_socket(options: &Arc<AttackOptions>) -> CheatFuture {
    let options = options.clone();
    Box::pin(async move {
        let (rig, player, before) = rig_after_pim(&options, "direct").await?;
        let now = auth::unix_now();
        let token = auth::mint(&options.auth_secret, &player, now, now + 600);
        let got = match Connection::connect(&options.endpoint, &token).await {
            Ok(connection) => {
                connection.close().await;
                Outcome::Accepted
            }
            Err(SimError::Http { status, body, .. }) => {
                refused_outcome(status, &ApiRefusal::read(&body))
            }
            Err(e) => return Err(e),
        };
        // Still the channel's: the rig talks for it.
        rig.observe(&player, got, before).await
    })
}

/// Two credentials whose scopes overlap: the second's channel joins the first's player, and
/// places it far away.
fn two_channels(options: &Arc<AttackOptions>) -> CheatFuture {
    let options = options.clone();
    Box::pin(async move {
        let (first, player, before) = rig_after_pim(&options, "claimed").await?;
        // A wider prefix covering the first's.
        let wider = format!("ch-{}-claim", options.run_id);
        let mut second = Rig::new(&options, "claimed-2", &[wider]).await?;
        second.place(&player, [0.0, 2.0, 0.0]).await?;
        let got = match second.join(&player).await? {
            Ok(()) => Outcome::Accepted,
            Err(code) => Outcome::Code(code),
        };
        second.close().await;
        first.observe(&player, got, before).await
    })
}
