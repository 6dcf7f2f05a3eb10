//! A player's side of its game server's channel: a seat (who it is, through which game server)
//! and, once joined, a link that behaves as the player's own WebSocket would
//! ([`crate::connection::Connection`]): a request with a fresh id collects every event up to its
//! `ack` or `error`; pushed effects wait to be drained; a `bye` ends it.

use std::time::{Duration, Instant};

use banter_client::channel::AwaitedAnswer;
use banter_protocol::{ClientMessage, Position, ServerMessage};
use tokio::sync::mpsc;

use super::mux::{ChannelClient, Command};
use crate::connection::{ANSWER_TIMEOUT, Reply, Welcome};
use crate::error::{Result, SimError};

/// A player a game server carries: its id (in the credential's scope) and locale, and the
/// game server's channel.
#[derive(Clone, Debug)]
pub struct ChannelSeat {
    pub client: ChannelClient,
    pub player: String,
    pub locale: Option<String>,
}

impl ChannelSeat {
    /// Joins the player to the channel and waits for its `welcome`. A refused join (an `error`
    /// event for the player) is [`SimError::Refused`].
    pub async fn join(&self) -> Result<ChannelLink> {
        let (route, inbox) = mpsc::unbounded_channel();
        self.client.send(Command::Join {
            player: self.player.clone(),
            locale: self.locale.clone(),
            route,
        })?;
        let mut link = ChannelLink {
            player: self.player.clone(),
            client: self.client.clone(),
            inbox,
            next_id: 0,
            ended: None,
            joined: false,
            welcome: Welcome {
                player: self.player.clone(),
                session: 0,
                profile: banter_protocol::Profile::default(),
                position: None,
                resume_token: String::new(),
                cutscene: None,
                locale: String::new(),
                locales: Vec::new(),
            },
        };
        loop {
            match link.recv(ANSWER_TIMEOUT).await? {
                ServerMessage::Error { code, message, .. } => {
                    return Err(SimError::Refused { code, message });
                }
                message => {
                    if let Some(welcome) = banter_client::channel::welcome_of(message) {
                        link.welcome = welcome;
                        link.joined = true;
                        return Ok(link);
                    }
                }
            }
        }
    }

    /// Places the player where the simulated world has it: the engine's position, sent in the
    /// next batch's `positions` (never as a `move`).
    pub fn place(&self, position: Position) -> Result<()> {
        self.client.send(Command::Place {
            player: self.player.clone(),
            position,
        })
    }
}

/// A joined player's session on the channel.
pub struct ChannelLink {
    player: String,
    client: ChannelClient,
    inbox: mpsc::UnboundedReceiver<ServerMessage>,
    next_id: u64,
    /// Set once the server said `bye` or the channel ended.
    ended: Option<SimError>,
    /// On the channel (joined, and neither left nor told `bye`).
    joined: bool,
    pub welcome: Welcome,
}

impl Drop for ChannelLink {
    /// A link dropped while its player is on the channel leaves it: a session given up (a lost
    /// answer, the end of the run) is not left carried.
    fn drop(&mut self) {
        if self.joined {
            let _ = self.client.send(Command::Leave {
                player: self.player.clone(),
            });
        }
    }
}

impl ChannelLink {
    pub fn player(&self) -> &str {
        &self.player
    }

    /// True once the server ended the player's session or the channel ended.
    pub fn is_ended(&self) -> bool {
        self.ended.is_some()
    }

    fn ended_error(&self) -> SimError {
        match &self.ended {
            Some(SimError::Bye { reason, message }) => SimError::Bye {
                reason: *reason,
                message: message.clone(),
            },
            _ => SimError::Closed,
        }
    }

    fn note(&mut self, message: &ServerMessage) {
        if let ServerMessage::Bye { reason, message } = message {
            self.joined = false;
            self.ended = Some(SimError::Bye {
                reason: *reason,
                message: message.clone(),
            });
        }
    }

    /// The player's next event, waiting at most `patience`.
    pub async fn recv(&mut self, patience: Duration) -> Result<ServerMessage> {
        if self.ended.is_some() {
            return Err(self.ended_error());
        }
        match tokio::time::timeout(patience, self.inbox.recv()).await {
            Err(_) => Err(SimError::Timeout(patience)),
            Ok(Some(message)) => {
                self.note(&message);
                Ok(message)
            }
            Ok(None) => {
                // The channel is gone: nothing to leave.
                self.joined = false;
                self.ended = Some(SimError::Closed);
                Err(SimError::Closed)
            }
        }
    }

    /// Every event already routed to the player, without waiting.
    pub fn drain(&mut self) -> Vec<ServerMessage> {
        let mut out = Vec::new();
        loop {
            match self.inbox.try_recv() {
                Ok(message) => {
                    self.note(&message);
                    out.push(message);
                }
                Err(mpsc::error::TryRecvError::Empty) => return out,
                Err(mpsc::error::TryRecvError::Disconnected) => {
                    self.joined = false;
                    self.ended.get_or_insert(SimError::Closed);
                    return out;
                }
            }
        }
    }

    /// Queues `message` with a fresh id and collects the player's events up to its `ack` or
    /// `error`; the round trip is from being queued to the answer.
    pub async fn request(&mut self, message: ClientMessage) -> Result<Reply> {
        if self.ended.is_some() {
            return Err(self.ended_error());
        }
        self.next_id += 1;
        let id = self.next_id;
        let started = Instant::now();
        self.client.send(Command::Message {
            player: self.player.clone(),
            message: message.with_id(id),
            queued: tokio::time::Instant::now(),
        })?;
        let mut awaited = AwaitedAnswer::new(id, started);
        loop {
            if let Some(reply) = awaited.take(self.recv(ANSWER_TIMEOUT).await?)? {
                return Ok(reply);
            }
        }
    }

    /// The player's client leaves the channel (nothing parked).
    pub fn leave(mut self) {
        if self.joined {
            self.joined = false;
            let _ = self.client.send(Command::Leave {
                player: self.player.clone(),
            });
        }
    }
}
