//! A cheating player: logs in as its own new player, controls every message, keeps the facts the
//! server's effects report, and can ask the server what its facts are now. And the shapes every
//! cheat shares: what it observed, and a cheat by a fresh player judged at an NPC.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use banter_protocol::{ActionType, ClientMessage, Position, ServerMessage};
use futures_util::future::BoxFuture;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Message;

use super::{AttackOptions, Outcome};
use crate::connection::{Connection, Reply};
use crate::error::{Result, SimError};
use crate::facts::{ClientFacts, Snapshot};
use crate::session::{Login, TALK_COOLDOWN, device_login};
use crate::world::{distance, stand_spot, step_toward};

/// What a cheat observed: the answer, and the facts before and after.
pub(super) struct Observed {
    pub(super) got: Outcome,
    pub(super) before: Snapshot,
    pub(super) after: Result<Snapshot>,
}

pub(super) type CheatFuture = Pin<Box<dyn Future<Output = Result<Observed>> + Send>>;

/// One row of the catalogue: its name, the answer a correct server gives, and the cheat.
pub(super) struct Cheat {
    pub(super) name: &'static str,
    pub(super) expected: Outcome,
    pub(super) run: CheatFuture,
}

/// A cheat by a new player `tag`: it talks to `arrive` once first (the baseline facts), then
/// `play` does the cheat and says what the server answered; the facts afterwards are read by
/// talking to `judge_at`.
pub(super) fn as_player<F>(
    options: &Arc<AttackOptions>,
    tag: &'static str,
    arrive: &'static str,
    judge_at: &'static str,
    play: F,
) -> CheatFuture
where
    F: for<'a> FnOnce(&'a mut Cheater) -> BoxFuture<'a, Result<Outcome>> + Send + 'static,
{
    let options = options.clone();
    Box::pin(async move {
        let mut p = Cheater::new(&options, tag).await?;
        p.arrive(arrive).await?;
        let before = p.facts.snapshot();
        let got = play(&mut p).await?;
        let after = p.server_facts(judge_at).await;
        Ok(Observed { got, before, after })
    })
}

pub(super) fn choose(response: &str) -> ClientMessage {
    ClientMessage::Choose {
        id: None,
        response: response.to_owned(),
    }
}

pub(super) fn advance(node: &str) -> ClientMessage {
    ClientMessage::Advance {
        id: None,
        node: node.to_owned(),
    }
}

/// A player the catalogue controls message by message.
pub(super) struct Cheater {
    options: Arc<AttackOptions>,
    /// The device id the player logs in with (again, for a fresh token).
    pub(super) device: String,
    pub(super) login: Login,
    pub(super) connection: Option<Connection>,
    pub(super) facts: ClientFacts,
    pub(super) position: Option<Position>,
    pub(super) last_move: Option<Instant>,
    last_talk: Option<Instant>,
}

/// What an answer says about a cheat: accepted, or refused with its code.
pub(super) fn outcome(reply: &Reply) -> Outcome {
    match &reply.answer {
        Ok(()) => Outcome::Accepted,
        Err(refusal) => Outcome::Code(refusal.code),
    }
}

impl Cheater {
    pub(super) async fn new(options: &Arc<AttackOptions>, tag: &str) -> Result<Cheater> {
        let device = format!("sim-attack-{}-{tag}", options.run_id);
        let login = device_login(&options.endpoint, &device).await?;
        let mut cheater = Cheater {
            options: options.clone(),
            device,
            login,
            connection: None,
            facts: ClientFacts::fresh(&options.content),
            position: None,
            last_move: None,
            last_talk: None,
        };
        cheater.reconnect().await?;
        Ok(cheater)
    }

    pub(super) async fn reconnect(&mut self) -> Result<()> {
        let connection = Connection::connect(&self.options.endpoint, &self.login.token).await?;
        self.facts.set_profile(&connection.welcome.profile);
        self.connection = Some(connection);
        Ok(())
    }

    pub(super) fn connection(&mut self) -> Result<&mut Connection> {
        self.connection.as_mut().ok_or(SimError::Closed)
    }

    pub(super) fn npc(&self, id: &str) -> Result<banter_dialogue::content::NpcDef> {
        self.options
            .content
            .npc(id)
            .cloned()
            .ok_or_else(|| SimError::Content(format!("the content has no NPC `{id}`")))
    }

    /// Sends a message with an id; its answer. Effects update the tracked facts.
    pub(super) async fn send(&mut self, message: ClientMessage) -> Result<Reply> {
        let reply = self.connection()?.request(message).await?;
        for m in &reply.messages {
            if let ServerMessage::Effect {
                effect, profile, ..
            } = m
            {
                self.facts.apply(&self.options.content, effect, profile);
            }
        }
        Ok(reply)
    }

    /// An honest step that must be accepted.
    pub(super) async fn honest(&mut self, message: ClientMessage) -> Result<Reply> {
        let kind = message.kind();
        let reply = self.send(message).await?;
        match &reply.answer {
            Ok(()) => Ok(reply),
            Err(r) => Err(SimError::Other(format!(
                "honest {kind} refused: {}",
                r.code.name()
            ))),
        }
    }

    pub(super) async fn choose(&mut self, response: &str) -> Result<Reply> {
        self.honest(ClientMessage::Choose {
            id: None,
            response: response.to_owned(),
        })
        .await
    }

    pub(super) async fn advance(&mut self, node: &str) -> Result<Reply> {
        self.honest(ClientMessage::Advance {
            id: None,
            node: node.to_owned(),
        })
        .await
    }

    pub(super) async fn action(&mut self, action: ActionType, payload: &str) -> Result<Reply> {
        self.honest(action_message(action, payload)).await
    }

    /// Moves the body to `to` in one accepted move.
    pub(super) async fn move_to(&mut self, to: Position) -> Result<()> {
        self.honest(ClientMessage::Move {
            id: None,
            position: to,
        })
        .await?;
        self.position = Some(to);
        self.last_move = Some(Instant::now());
        Ok(())
    }

    /// Walks honestly (short steps, well under the speed limit) to `to`; spawns there if the
    /// body has none yet.
    pub(super) async fn walk_to(&mut self, to: Position) -> Result<()> {
        loop {
            let Some(from) = self.position else {
                return self.move_to(to).await;
            };
            if distance(from, to) < 0.01 {
                return Ok(());
            }
            if let Some(last) = self.last_move {
                tokio::time::sleep_until(last + Duration::from_millis(300)).await;
            }
            self.move_to(step_toward(from, to, 9.0)).await?;
        }
    }

    /// Talks to `npc_id` by its display name (with a hint if given), after the cooldown.
    pub(super) async fn talk(&mut self, npc_id: &str, hint: Option<&str>) -> Result<Reply> {
        let npc = self.npc(npc_id)?;
        if let Some(last) = self.last_talk {
            tokio::time::sleep_until(last + TALK_COOLDOWN).await;
        }
        self.talk_now(&npc.name, hint).await
    }

    /// Talks without waiting for the cooldown.
    pub(super) async fn talk_now(&mut self, name: &str, hint: Option<&str>) -> Result<Reply> {
        let reply = self
            .send(ClientMessage::Talk {
                id: None,
                npc: name.to_owned(),
                instance: hint.map(str::to_owned),
                cached: None,
            })
            .await?;
        if reply.answer.is_ok() {
            self.last_talk = Some(Instant::now());
            for m in &reply.messages {
                if let ServerMessage::Opened { facts, .. } = m {
                    self.facts.opened(&self.options.content, facts);
                }
            }
        }
        Ok(reply)
    }

    /// Walks to `npc_id`, opens a conversation (its facts are the baseline) and keeps it open.
    pub(super) async fn open(&mut self, npc_id: &str) -> Result<()> {
        let npc = self.npc(npc_id)?;
        self.walk_to(stand_spot(&npc)).await?;
        let reply = self.talk(npc_id, Some(npc_id)).await?;
        if reply.answer.is_err() {
            return Err(SimError::Other(format!(
                "honest talk to {npc_id} refused: {}",
                outcome(&reply)
            )));
        }
        Ok(())
    }

    /// Walks to `npc_id` and talks to it once (open and close): the baseline facts.
    pub(super) async fn arrive(&mut self, npc_id: &str) -> Result<()> {
        self.open(npc_id).await?;
        self.honest(ClientMessage::Close { id: None }).await?;
        Ok(())
    }

    /// What the server says the player's facts are now: close whatever is open, walk back to
    /// `npc_id` and talk to it.
    pub(super) async fn server_facts(&mut self, npc_id: &str) -> Result<Snapshot> {
        if self.connection.as_ref().is_none_or(Connection::is_ended) {
            self.reconnect().await?;
        }
        let _ = self.send(ClientMessage::Close { id: None }).await?;
        let npc = self.npc(npc_id)?;
        self.walk_to(stand_spot(&npc)).await?;
        let reply = self.talk(npc_id, Some(npc_id)).await?;
        // The server's sheet names only the quests the player holds and the conversation's
        // conditions name: every other status follows from the prerequisites, as the baseline's.
        let content = &self.options.content;
        let facts = reply
            .messages
            .iter()
            .find_map(|m| match m {
                ServerMessage::Opened { facts, .. } => {
                    let mut seen = ClientFacts::fresh(content);
                    seen.opened(content, facts);
                    Some(seen.snapshot())
                }
                _ => None,
            })
            .ok_or_else(|| SimError::Other(format!("talking to {npc_id} opened nothing")))?;
        let _ = self.send(ClientMessage::Close { id: None }).await?;
        Ok(facts)
    }

    /// Sends a raw frame and reads its answer: the error's code, `Accepted` for an ack, or
    /// how the session ended.
    pub(super) async fn raw(&mut self, frame: Message) -> Result<Outcome> {
        let connection = self.connection()?;
        connection.send_frame(frame).await?;
        answer_of_raw(connection).await
    }
}

/// The answer to a raw frame: the error's code, `Accepted` for an ack, or how the session
/// ended.
pub(super) async fn answer_of_raw(connection: &mut Connection) -> Result<Outcome> {
    loop {
        match connection.recv(Duration::from_secs(10)).await {
            Ok(ServerMessage::Error { code, .. }) => return Ok(Outcome::Code(code)),
            Ok(ServerMessage::Ack { .. }) => return Ok(Outcome::Accepted),
            Ok(ServerMessage::Bye { reason, .. }) => return Ok(Outcome::Bye(reason)),
            Ok(_) => continue,
            Err(SimError::Closed) => return Ok(Outcome::Dropped),
            Err(e) => return Err(e),
        }
    }
}

pub(super) fn action_message(action: ActionType, payload: &str) -> ClientMessage {
    ClientMessage::Action {
        id: None,
        action,
        payload: payload.to_owned(),
    }
}
