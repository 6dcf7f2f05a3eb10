//! The multiplexer: one task per simulated game server, owning its channel. Players hand it
//! [`Command`]s; it batches them (positions first, then items in the order queued), sends the
//! batch over HTTP or the channel's WebSocket, and routes each event to its player.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use banter_client::channel::{BatchOutcome, ChannelSocket, connect_socket, read_batch_answer};
use banter_protocol::channel::{Batch, Event, Events, Frame, Item, Placed};
use banter_protocol::{ClientMessage, Effect, Position, ServerMessage};
use futures_util::{SinkExt, StreamExt};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Message;

use super::{ChannelConfig, ChannelStats, Transport, peak_within};
use crate::error::{Result, SimError};
use crate::http::Http;

/// How many times in a row a batch that got no answer is sent again before the channel is
/// given up.
const MAX_RETRIES: u32 = 5;

/// What a player asks of its game server.
#[derive(Debug)]
pub enum Command {
    /// The player's session starts on the channel; its events go to `route`.
    Join {
        player: String,
        locale: Option<String>,
        route: mpsc::UnboundedSender<ServerMessage>,
    },
    /// A message (with its id) for the player's session.
    Message {
        player: String,
        message: ClientMessage,
        queued: Instant,
    },
    /// Where the engine has the player now.
    Place { player: String, position: Position },
    /// The player's client left.
    Leave { player: String },
}

/// A game server's handle on its channel: what its players queue through.
#[derive(Clone, Debug)]
pub struct ChannelClient {
    pub(super) commands: mpsc::UnboundedSender<Command>,
}

impl ChannelClient {
    pub(super) fn send(&self, command: Command) -> Result<()> {
        self.commands.send(command).map_err(|_| SimError::Closed)
    }
}

/// Opens a channel as `config` says and starts its multiplexer: the handle players queue
/// through, and the task that ends (with what it measured) once every handle is dropped and what
/// they queued was delivered.
pub async fn open(config: ChannelConfig) -> Result<(ChannelClient, JoinHandle<ChannelStats>)> {
    let (commands, inbox) = mpsc::unbounded_channel();
    let mut mux = Mux::new(ChannelStats::new()?);
    let task = match config.transport {
        Transport::Http => {
            let http = Http::with_timeout(
                config.endpoint.clone(),
                banter_client::channel::long_poll_timeout(config.long_poll),
            )?;
            let opened = http.open_channel(&config.credential).await?;
            mux.stats.channel = opened.channel.clone();
            let http = HttpChannel {
                http,
                credential: config.credential.clone(),
                channel: opened.channel,
                interval: config.interval(),
                long_poll: config.long_poll,
            };
            tokio::spawn(http.run(mux, inbox))
        }
        Transport::Ws => {
            let (socket, opened) = connect_socket(&config.endpoint, &config.credential).await?;
            mux.stats.channel = opened.channel;
            tokio::spawn(run_socket(mux, inbox, socket))
        }
    };
    Ok((ChannelClient { commands }, task))
}

/// What a player waits for.
#[derive(Debug, PartialEq, Eq)]
enum Awaiting {
    Join,
    Message(u64),
}

/// What the multiplexer holds between batches: routes, what is queued, what is awaited.
struct Mux {
    routes: HashMap<String, mpsc::UnboundedSender<ServerMessage>>,
    awaiting: HashMap<String, VecDeque<(Awaiting, Instant)>>,
    positions: Vec<Placed>,
    placed: HashMap<String, usize>,
    items: Vec<Item<ClientMessage>>,
    /// The highest event number seen: the next batch's `ack`.
    seen: u64,
    /// The channel ended under its players (revoked, unknown, socket closed).
    dead: bool,
    stats: ChannelStats,
    starts: Vec<Instant>,
    opened: Instant,
}

impl Mux {
    fn new(stats: ChannelStats) -> Mux {
        Mux {
            routes: HashMap::new(),
            awaiting: HashMap::new(),
            positions: Vec::new(),
            placed: HashMap::new(),
            items: Vec::new(),
            seen: 0,
            dead: false,
            stats,
            starts: Vec::new(),
            opened: Instant::now(),
        }
    }

    fn queued(&self) -> bool {
        !self.positions.is_empty() || !self.items.is_empty()
    }

    fn absorb(&mut self, command: Command) {
        if self.dead {
            // Dropping a join's route tells its player at once that the channel is gone.
            return;
        }
        match command {
            Command::Join {
                player,
                locale,
                route,
            } => {
                self.routes.insert(player.clone(), route);
                let mut awaiting = VecDeque::new();
                awaiting.push_back((Awaiting::Join, Instant::now()));
                self.awaiting.insert(player.clone(), awaiting);
                self.items.push(Item::join(player, locale));
            }
            Command::Message {
                player,
                message,
                queued,
            } => {
                if let Some(id) = message.id() {
                    self.awaiting
                        .entry(player.clone())
                        .or_default()
                        .push_back((Awaiting::Message(id), queued));
                }
                self.items.push(Item::message(player, message));
            }
            Command::Place { player, position } => match self.placed.get(&player) {
                Some(&i) => self.positions[i].position = position,
                None => {
                    self.placed.insert(player.clone(), self.positions.len());
                    self.positions.push(Placed { player, position });
                }
            },
            Command::Leave { player } => {
                self.routes.remove(&player);
                self.awaiting.remove(&player);
                self.items.push(Item::leave(player));
            }
        }
    }

    /// What is queued, as the next batch's positions and items.
    fn take(&mut self) -> (Vec<Placed>, Vec<Item<ClientMessage>>) {
        self.placed.clear();
        let positions = std::mem::take(&mut self.positions);
        let items = std::mem::take(&mut self.items);
        self.stats.positions += positions.len() as u64;
        self.stats.items += items.len() as u64;
        (positions, items)
    }

    fn sent(&mut self) {
        self.stats.requests += 1;
        self.starts.push(Instant::now());
    }

    /// One event: measured, counted, and handed to its player (once: a number seen before is
    /// dropped).
    fn event(&mut self, event: Event<ServerMessage>) {
        if event.n <= self.seen {
            return;
        }
        self.seen = event.n;
        self.stats.events += 1;
        let Event {
            player, message, ..
        } = event;
        let answered = match &message {
            ServerMessage::Ack { id } => Some(Some(Awaiting::Message(*id))),
            ServerMessage::Error { id, code, .. } => {
                *self
                    .stats
                    .rejections
                    .entry(code.name().to_owned())
                    .or_insert(0) += 1;
                // An error without an id answers the player's oldest unanswered item.
                Some(id.map(Awaiting::Message))
            }
            ServerMessage::Welcome { .. } => Some(Some(Awaiting::Join)),
            ServerMessage::Effect {
                effect: Effect::QuestCompleted { .. },
                ..
            } => {
                self.stats.quests_paid += 1;
                None
            }
            _ => None,
        };
        if let Some(answered) = answered
            && let Some(awaiting) = self.awaiting.get_mut(&player)
        {
            let at = match answered {
                Some(what) => awaiting.iter().position(|(a, _)| *a == what),
                None => (!awaiting.is_empty()).then_some(0),
            };
            if let Some((_, queued)) = at.and_then(|i| awaiting.remove(i)) {
                let micros = u64::try_from(queued.elapsed().as_micros()).unwrap_or(u64::MAX);
                self.stats.latency.saturating_record(micros.max(1));
            }
        }
        if matches!(message, ServerMessage::Bye { .. }) {
            self.awaiting.remove(&player);
        }
        if let Some(route) = self.routes.get(&player)
            && route.send(message).is_err()
        {
            self.routes.remove(&player);
        }
    }

    /// The channel is gone: every player's link sees its connection closed.
    fn die(&mut self, why: String) {
        self.stats.error(why);
        self.dead = true;
        self.routes.clear();
        self.awaiting.clear();
        self.positions.clear();
        self.placed.clear();
        self.items.clear();
    }

    fn finish(mut self) -> ChannelStats {
        self.stats.duration = self.opened.elapsed();
        self.stats.peak_requests_per_minute = peak_within(&self.starts, Duration::from_secs(60));
        self.stats
    }
}

/// Takes every command already queued; false once every handle is gone.
fn drain(mux: &mut Mux, inbox: &mut mpsc::UnboundedReceiver<Command>) -> bool {
    loop {
        match inbox.try_recv() {
            Ok(command) => mux.absorb(command),
            Err(mpsc::error::TryRecvError::Empty) => return true,
            Err(mpsc::error::TryRecvError::Disconnected) => return false,
        }
    }
}

/// A channel over HTTP batches.
struct HttpChannel {
    http: Http,
    credential: String,
    channel: String,
    interval: Duration,
    long_poll: Duration,
}

impl HttpChannel {
    async fn run(self, mut mux: Mux, mut inbox: mpsc::UnboundedReceiver<Command>) -> ChannelStats {
        let mut seq = 0u64;
        let mut open = true;
        let mut more = false;
        let mut last_sent: Option<Instant> = None;
        // A batch that got no answer, to send again as it was.
        let mut retry: Option<(String, u32)> = None;
        loop {
            // Nobody on the channel and nothing to say: wait for a player.
            if open && !mux.queued() && mux.routes.is_empty() && retry.is_none() && !more {
                match inbox.recv().await {
                    Some(command) => mux.absorb(command),
                    None => open = false,
                }
            }
            // The budget: no request sooner than one interval after the last one started.
            if let Some(last) = last_sent {
                let slot = last + self.interval;
                while open && Instant::now() < slot {
                    tokio::select! {
                        _ = tokio::time::sleep_until(slot) => {}
                        command = inbox.recv() => match command {
                            Some(command) => mux.absorb(command),
                            None => open = false,
                        },
                    }
                }
                tokio::time::sleep_until(slot).await;
            }
            if open {
                open = drain(&mut mux, &mut inbox);
            }
            if mux.dead {
                if !open {
                    break;
                }
                // Wait for the last handles to go.
                while inbox.recv().await.is_some() {}
                break;
            }
            if !open && !mux.queued() && retry.is_none() {
                break;
            }
            let (body, attempt) = match retry.take() {
                Some((body, attempt)) => (body, attempt),
                None => {
                    seq += 1;
                    let (positions, items) = mux.take();
                    let wait = if more || !open {
                        Duration::ZERO
                    } else {
                        self.long_poll
                    };
                    let batch = Batch {
                        seq,
                        ack: mux.seen,
                        wait_ms: u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
                        positions,
                        items,
                        parties: Vec::new(),
                    };
                    match serde_json::to_string(&batch) {
                        Ok(body) => (body, 0),
                        Err(e) => {
                            mux.die(format!("a batch that does not encode: {e}"));
                            continue;
                        }
                    }
                }
            };
            last_sent = Some(Instant::now());
            mux.sent();
            let answer = self
                .http
                .post_batch_text(&self.credential, &self.channel, &body)
                .await
                .and_then(|(status, text)| read_batch_answer(&self.channel, status, text));
            more = false;
            match answer {
                Ok(BatchOutcome::Answered(answer)) => {
                    more = answer.more;
                    for event in answer.events {
                        mux.event(event);
                    }
                }
                Ok(BatchOutcome::Refused {
                    status, refusal, ..
                }) => {
                    let what = format!(
                        "batch {seq}: HTTP {status} {}: {}",
                        refusal.error, refusal.message
                    );
                    match status {
                        // The channel or its credential is gone.
                        401 | 403 | 404 => mux.die(what),
                        // Refused whole: nothing in it was applied, and its players will not
                        // be answered.
                        _ => mux.stats.error(what),
                    }
                }
                Err(e) if e.is_disconnect() && attempt < MAX_RETRIES => {
                    // Lost on the way: the same `seq` again, which applies nothing twice.
                    mux.stats.retries += 1;
                    retry = Some((body, attempt + 1));
                }
                Err(e) => mux.die(format!("batch {seq}: {e}")),
            }
        }
        if !mux.dead {
            let _ = self
                .http
                .close_channel(&self.credential, &self.channel)
                .await;
        }
        mux.finish()
    }
}

/// A channel over one WebSocket: whatever is queued goes out as one frame at once.
async fn run_socket(
    mut mux: Mux,
    mut inbox: mpsc::UnboundedReceiver<Command>,
    socket: ChannelSocket,
) -> ChannelStats {
    let (mut sink, mut stream) = socket.split();
    let mut open = true;
    loop {
        if mux.queued() {
            let (positions, items) = mux.take();
            let frame = Frame {
                positions,
                items,
                parties: Vec::new(),
            };
            let text = match serde_json::to_string(&frame) {
                Ok(text) => text,
                Err(e) => {
                    mux.die(format!("a frame that does not encode: {e}"));
                    break;
                }
            };
            mux.sent();
            if let Err(e) = sink.send(Message::Text(text.into())).await {
                mux.die(format!("the channel's socket: {e}"));
                break;
            }
        }
        if !open {
            break;
        }
        tokio::select! {
            command = inbox.recv() => match command {
                Some(command) => {
                    mux.absorb(command);
                    open = drain(&mut mux, &mut inbox);
                }
                None => open = false,
            },
            frame = stream.next() => match frame {
                Some(Ok(Message::Text(text))) => {
                    match serde_json::from_str::<Events<ServerMessage>>(text.as_str()) {
                        Ok(events) => {
                            for event in events.events {
                                mux.event(event);
                            }
                        }
                        Err(_) => {
                            let refusal = banter_client::channel::ApiRefusal::read(text.as_str());
                            mux.stats.error(format!(
                                "a frame refused: {} {}",
                                refusal.error, refusal.message
                            ));
                        }
                    }
                }
                Some(Ok(Message::Close(_))) | None => {
                    mux.die("the channel's socket closed".to_owned());
                    break;
                }
                Some(Err(e)) => {
                    mux.die(format!("the channel's socket: {e}"));
                    break;
                }
                Some(Ok(_)) => {}
            },
        }
    }
    if mux.dead {
        while inbox.recv().await.is_some() {}
    } else {
        // The leaves are sent: read what is left (an answer to them, if any) for a moment, then
        // close.
        let _ = tokio::time::timeout(Duration::from_millis(200), async {
            while let Some(Ok(Message::Text(text))) = stream.next().await {
                if let Ok(events) = serde_json::from_str::<Events<ServerMessage>>(text.as_str()) {
                    for event in events.events {
                        mux.event(event);
                    }
                }
            }
        })
        .await;
        let _ = sink.send(Message::Close(None)).await;
    }
    mux.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use banter_protocol::ErrorCode;

    /// A mux with `gs-1` joined, and the route of `gs-1`'s events.
    fn mux_with_gs1() -> (Mux, mpsc::UnboundedReceiver<ServerMessage>) {
        let mut mux = Mux::new(ChannelStats::new().expect("stats"));
        let (route, rx) = mpsc::unbounded_channel();
        mux.absorb(Command::Join {
            player: "gs-1".into(),
            locale: None,
            route,
        });
        (mux, rx)
    }

    fn place(mux: &mut Mux, player: &str, x: f64) {
        mux.absorb(Command::Place {
            player: player.into(),
            position: [x, 0.0, 0.0],
        });
    }

    #[test]
    fn positions_coalesce_per_player_and_items_keep_their_order() {
        let (mut mux, _rx) = mux_with_gs1();
        place(&mut mux, "gs-1", 1.0);
        place(&mut mux, "gs-2", 2.0);
        place(&mut mux, "gs-1", 3.0);
        mux.absorb(Command::Leave {
            player: "gs-2".into(),
        });
        let (positions, items) = mux.take();
        assert_eq!(positions.len(), 2);
        assert_eq!(positions[0].position, [3.0, 0.0, 0.0]);
        assert_eq!(items.len(), 2);
        assert!(items[0].join.is_some() && items[1].leave == Some(true));
        assert!(!mux.queued());
        assert_eq!((mux.stats.positions, mux.stats.items), (2, 2));
    }

    #[test]
    fn events_are_routed_once_and_answers_measured() {
        let (mut mux, mut rx) = mux_with_gs1();
        mux.absorb(Command::Message {
            player: "gs-1".into(),
            message: ClientMessage::Close { id: Some(4) },
            queued: Instant::now(),
        });
        let event = |n, message| Event {
            n,
            player: "gs-1".to_owned(),
            message,
        };
        mux.event(event(1, ServerMessage::Ack { id: 4 }));
        mux.event(event(1, ServerMessage::Ack { id: 4 }));
        mux.event(event(
            2,
            ServerMessage::Error {
                id: None,
                code: ErrorCode::NotJoined,
                message: String::new(),
                retryable: false,
            },
        ));
        assert_eq!(mux.seen, 2);
        assert_eq!(mux.stats.events, 2, "a number seen before is dropped");
        assert_eq!(mux.stats.latency.len(), 2, "the ack and the join's refusal");
        assert_eq!(mux.stats.rejections.get("not_joined"), Some(&1));
        assert!(matches!(rx.try_recv(), Ok(ServerMessage::Ack { id: 4 })));
        assert!(matches!(rx.try_recv(), Ok(ServerMessage::Error { .. })));
        assert!(rx.try_recv().is_err());
    }
}
