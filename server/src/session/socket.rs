//! The socket task: frames in, frames out. Everything between is the frame layer (`frames.rs`)
//! and the command layer (`core.rs`); this file only moves what they decide, and owns the
//! session's life: load and claim the player, serve, say goodbye, park, release.
//!
//! One task reads and writes the socket ([`Connection`]): answers wait in the session's
//! [`Outbox`] and go into the socket while the task waits for the next frame, flushed once
//! when no frame is left to read, as the bench's echo does. No writer task, no channel, no
//! cross-thread wake-up per message.

use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket};
use banter_protocol::{ByeReason, ServerMessage};
use futures_util::stream::Peekable;
use futures_util::{FutureExt, Sink, SinkExt, Stream, StreamExt};
use tokio::time::Instant;

use super::core::{Now, SessionCore, Step};
use super::frames::{Checked, FrameCheck};
use super::life::{self, Carrier, Deliver};
use super::refusal::Refusal;
use crate::app::SharedApp;
use crate::hub::{Control, ControlQueue};
use crate::outbox::Outbox;

/// How long a session that said goodbye keeps reading, for the client's Close.
const LINGER: Duration = Duration::from_secs(1);

/// Why the session loop stops.
enum End {
    /// The client sent a Close frame: it chose to leave, so nothing is parked.
    ClientClosed,
    /// The connection broke without a Close.
    Dropped,
    /// The server ends it, telling the client why.
    Bye(ByeReason, &'static str),
    /// The client stopped reading: nothing more can be sent.
    TooSlow,
}

impl End {
    /// A session that ended without the client choosing to (a dropped or silent connection, a
    /// reconnect that replaced it, a client that stopped reading, the server shutting down)
    /// parks its open conversation for a `resume` within the grace window, on any instance.
    fn parks(&self) -> bool {
        match self {
            End::Dropped | End::TooSlow => true,
            End::ClientClosed => false,
            End::Bye(reason, _) => matches!(
                reason,
                ByeReason::Replaced | ByeReason::Timeout | ByeReason::Shutdown
            ),
        }
    }
}

/// Runs a session on an upgraded socket until it ends.
pub async fn run(
    app: SharedApp,
    socket: WebSocket,
    player: String,
    token_expires: u64,
    locale: Option<banter_dialogue::locale::Locale>,
    starting: tokio::sync::OwnedSemaphorePermit,
) {
    let control = std::sync::Arc::new(ControlQueue::default());
    let id = life::begin(
        &app,
        &player,
        Deliver::Session(control.clone()),
        Carrier::Direct,
    );
    let mut conn = Connection {
        socket: socket.peekable(),
        outbox: Outbox::new(
            app.config.limits.outgoing_queue,
            app.config.limits.outgoing_queue_bytes,
        ),
        unflushed: false,
    };

    // Boxed, as the park below: run once, their store futures need not be reserved in the task
    // for the whole session.
    let started = Box::pin(start(&app, &player, id, &mut conn.socket)).await;
    // Started (or not): the store work of a session start is done.
    drop(starting);
    let claimed = matches!(started, Ok(Started::Session(_)));
    let end = match started {
        Err(refusal) => {
            let _ = conn.outbox.try_send(text(&refusal.to_message(None)));
            End::Dropped
        }
        Ok(Started::Left) => End::ClientClosed,
        Ok(Started::Session(record)) => {
            let mut core = SessionCore::new(app.clone(), player.clone(), id, record);
            core.set_locale(locale);
            let mut session = Socket {
                app: app.clone(),
                conn: &mut conn,
                frames: FrameCheck::new(&app.config.limits, app.now()),
                last_seen: Instant::now(),
            };
            if let Err(e) = core.load_party(crate::clock::unix_millis()).await {
                tracing::warn!(%player, error = %e, "party not read for the welcome");
            }
            let end = if session.send(&core.welcome()) {
                session.serve(&mut core, &control, token_expires).await
            } else {
                End::TooSlow
            };
            if !matches!(end, End::Bye(ByeReason::Replaced, _)) {
                core.hand_on_leadership().await;
            }
            if end.parks() {
                // The one place a connection's end is timed: the core reads no clock.
                Box::pin(core.park(life::now(&app))).await;
            }
            core.end().await;
            end
        }
    };

    let said_bye = matches!(end, End::Bye(..));
    let goodbye = match end {
        End::Bye(reason, message) => {
            let _ = conn.outbox.try_send(text(&ServerMessage::Bye {
                reason,
                message: message.into(),
            }));
            let _ = conn.outbox.try_send(Message::Close(Some(CloseFrame {
                code: 1000,
                reason: Utf8Bytes::from_static(message),
            })));
            true
        }
        End::ClientClosed | End::Dropped => {
            let _ = conn.outbox.try_send(Message::Close(None));
            true
        }
        // Nothing more can be written to a client that stopped reading.
        End::TooSlow => false,
    };
    if goodbye {
        // What is queued goes out and the socket closes; a stuck peer cannot hold it long.
        let _ = tokio::time::timeout(Duration::from_secs(5), conn.finish()).await;
    }
    let stream = &mut conn.socket;
    if said_bye {
        // Read what the client still sends until it answers our Close, briefly. Closing with
        // unread data in the socket makes the kernel reset the connection, and a reset throws
        // away the `bye` still waiting in the client's receive buffer (a flooder would never
        // learn why it was cut off).
        let _ = tokio::time::timeout(LINGER, async {
            while let Some(Ok(frame)) = stream.next().await {
                if matches!(frame, Message::Close(_)) {
                    break;
                }
            }
        })
        .await;
    }
    life::finish(&app, &player, id, claimed).await;
}

/// How a session start ended.
enum Started {
    /// Loaded and claimed: the session is served.
    Session(crate::store::PlayerRecord),
    /// The client closed before the claim: nothing to claim, nothing to release.
    Left,
}

/// Loads the player and claims it for this session. Without both there is no session: the
/// client gets `store_unavailable` (no id) and the connection closes. A client that has already
/// closed by the time the player is loaded gets no claim (and so no release): a connect storm
/// that upgrades and leaves at once (RELIABILITY.md, scenario 6) otherwise costs two writes a
/// connection at SQLite's one writer, which honest players' quest writes queue behind.
async fn start<S, E>(
    app: &SharedApp,
    player: &str,
    id: u64,
    stream: &mut Peekable<S>,
) -> Result<Started, Refusal>
where
    S: Stream<Item = Result<Message, E>> + Unpin,
{
    if app.hub.carried_elsewhere(player, None).is_some() {
        return Err(super::refusal::ChannelError::CarriedElsewhere(player.to_owned()).into());
    }
    let record = app.store.load_player(player).await?;
    if left_already(stream) {
        return Ok(Started::Left);
    }
    life::claim(app, player, id, Carrier::Direct).await?;
    Ok(Started::Session(record))
}

/// True when what the client sent next, already here, is a Close frame or the end of the
/// connection. Looks without waiting and without taking the frame: an early request stays
/// for the session to serve.
fn left_already<S, E>(stream: &mut Peekable<S>) -> bool
where
    S: Stream<Item = Result<Message, E>> + Unpin,
{
    matches!(
        std::pin::Pin::new(stream).peek().now_or_never(),
        Some(None | Some(Err(_) | Ok(Message::Close(_))))
    )
}

/// The session's WebSocket and what waits to go into it, read and written by the session's
/// own task.
struct Connection {
    socket: Peekable<WebSocket>,
    outbox: Outbox,
    /// Frames are in the WebSocket's write buffer that no flush has sent yet.
    unflushed: bool,
}

impl Connection {
    /// Moves what the outbox holds into the WebSocket's write buffer (which writes to the
    /// socket by itself past its size), as far as the socket takes it. `Ready(Err)`: broken.
    fn poll_feed(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), axum::Error>> {
        while !self.outbox.is_empty() {
            ready!(Pin::new(&mut self.socket).poll_ready(cx))?;
            let Some(message) = self.outbox.pop() else {
                break;
            };
            Pin::new(&mut self.socket).start_send(message)?;
            self.unflushed = true;
        }
        Poll::Ready(Ok(()))
    }

    /// Feeds the outbox and flushes what was fed.
    fn poll_write(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), axum::Error>> {
        ready!(self.poll_feed(cx))?;
        if self.unflushed {
            ready!(Pin::new(&mut self.socket).poll_flush(cx))?;
            self.unflushed = false;
        }
        Poll::Ready(Ok(()))
    }

    /// The next frame; `None` when the connection ended or broke. While it waits, queued
    /// answers go out: fed at once, flushed only when no frame is waiting to be read, so the
    /// answers to frames that arrived together leave in one write (as the echo's do).
    async fn next_frame(&mut self) -> Option<Message> {
        std::future::poll_fn(|cx| {
            if let Poll::Ready(Err(_)) = self.poll_feed(cx) {
                return Poll::Ready(None);
            }
            match Pin::new(&mut self.socket).poll_next(cx) {
                Poll::Ready(Some(Ok(frame))) => return Poll::Ready(Some(frame)),
                Poll::Ready(Some(Err(_)) | None) => return Poll::Ready(None),
                Poll::Pending => {}
            }
            match self.poll_write(cx) {
                Poll::Ready(Err(_)) => Poll::Ready(None),
                _ => Poll::Pending,
            }
        })
        .await
    }

    /// Runs `work` (a message's handling), writing what is queued while it waits (on the
    /// store): the answers to earlier frames are not held back behind a slow step. A step that
    /// finishes at its first poll, as most do, costs no write of its own.
    async fn writing_while<T>(&mut self, work: impl Future<Output = T>) -> T {
        // Boxed: the command's future (store steps included, about 2.5 KiB) is then allocated
        // while a message is handled, not reserved in every idle session's task
        // (BENCHMARKS.md, memory per session).
        let mut work = Box::pin(work);
        std::future::poll_fn(|cx| {
            if let Poll::Ready(done) = work.as_mut().poll(cx) {
                return Poll::Ready(done);
            }
            // A broken socket is found by the next read; the work finishes either way.
            let _ = self.poll_write(cx);
            Poll::Pending
        })
        .await
    }

    /// Writes everything queued (the goodbye included), then closes the socket.
    async fn finish(&mut self) {
        if std::future::poll_fn(|cx| self.poll_write(cx)).await.is_ok() {
            let _ = self.socket.close().await;
        }
    }
}

fn text(message: &ServerMessage) -> Message {
    Message::Text(message.to_json().into())
}

/// The connection's side of a session: the connection, the frame checks, liveness.
struct Socket<'c> {
    app: SharedApp,
    conn: &'c mut Connection,
    frames: FrameCheck,
    last_seen: Instant,
}

impl Socket<'_> {
    /// Queues a message; false if the client stopped reading and the queue is full.
    fn send(&mut self, message: &ServerMessage) -> bool {
        self.conn.outbox.try_send(text(message)).is_ok()
    }

    /// Queues a step's messages together (see [`Outbox::try_send_all`]); the end of the
    /// session if the client stopped reading.
    fn send_all(&mut self, messages: &[ServerMessage]) -> Option<End> {
        let queued = match messages {
            // Most steps answer with their `ack` alone: no list to build.
            [one] => self.send(one),
            _ => self
                .conn
                .outbox
                .try_send_all(messages.iter().map(text).collect())
                .is_ok(),
        };
        (!queued).then_some(End::TooSlow)
    }

    async fn serve(
        &mut self,
        core: &mut SessionCore,
        control: &ControlQueue,
        token_expires: u64,
    ) -> End {
        // A session does not outlive its token.
        let expires_in =
            Duration::from_secs(token_expires.saturating_sub(crate::clock::unix_now()));
        let expiry = tokio::time::sleep(expires_in);
        tokio::pin!(expiry);
        let limits = self.app.config.limits.clone();
        let mut ping =
            tokio::time::interval_at(Instant::now() + limits.ping_interval, limits.ping_interval);
        // A token of the session's own, cancelled with the server's: asking a token whether it
        // is cancelled, and polling its waiter, take its lock, and the server's one token is
        // shared by every session on both runtime threads, where this one is not (BENCHMARKS.md,
        // issue 37, sixth pass). The waiter is made once and kept across frames, not per frame:
        // it registers under that lock when first polled and takes itself out when dropped.
        let shutdown = self.app.shutdown.child_token();
        let cancelled = shutdown.cancelled();
        tokio::pin!(cancelled);
        let next_control = control.recv();
        tokio::pin!(next_control);
        loop {
            tokio::select! {
                // In this order: a session the store's claim replaced stops before it handles
                // another frame (the newer session was told its claim won before its welcome),
                // and a client that never stops sending cannot starve shutdown or expiry (pings
                // after frames, so a frame already in never loses to the idle check).
                biased;
                received = &mut next_control => {
                    next_control.set(control.recv());
                    match received {
                    Control::Replaced => {
                        return End::Bye(ByeReason::Replaced, "the player connected again elsewhere");
                    }
                    Control::Progress(effects) => {
                        let messages = core.on_progress(effects).await;
                        if let Some(end) = self.send_all(&messages) {
                            return end;
                        }
                    }
                    Control::Shared(event) => {
                        let messages = core.on_shared(*event, life::now(&self.app)).await;
                        if let Some(end) = self.send_all(&messages) {
                            return end;
                        }
                    }
                    }
                },
                () = &mut cancelled => {
                    return End::Bye(ByeReason::Shutdown, "the server is shutting down");
                }
                _ = &mut expiry => {
                    return End::Bye(ByeReason::TokenExpired, "the token expired; log in again");
                }
                frame = self.conn.next_frame() => {
                    let Some(mut frame) = frame else { return End::Dropped };
                    // Frames already received are handled one after another, as the echo
                    // does, without a turn through this select each (a turn polls the four
                    // other branches: BENCHMARKS.md, issue 37), for as long as nothing the
                    // select would take first is waiting: a control message, shutdown, the
                    // token's expiry.
                    loop {
                        // The one monotonic reading per frame: liveness, the server time and
                        // the handling histogram's start.
                        let arrived = Instant::now();
                        self.last_seen = arrived;
                        if let Some(end) = self.on_frame(core, frame, arrived).await {
                            return end;
                        }
                        if !control.is_empty()
                            || shutdown.is_cancelled()
                            || expiry.deadline() <= arrived
                        {
                            break;
                        }
                        match self.conn.next_frame().now_or_never() {
                            Some(Some(next)) => frame = next,
                            Some(None) => return End::Dropped,
                            // None waiting: back to the select, which writes the answers.
                            None => break,
                        }
                    }
                }
                _ = ping.tick() => {
                    if self.last_seen.elapsed() > limits.idle_timeout {
                        return End::Bye(ByeReason::Timeout, "no answer to pings");
                    }
                    if self.conn.outbox.try_send(Message::Ping(Default::default())).is_err() {
                        return End::TooSlow;
                    }
                }
            }
        }
    }

    /// One frame through the frame layer and, if it is a message, the command layer.
    async fn on_frame(
        &mut self,
        core: &mut SessionCore,
        frame: Message,
        arrived: Instant,
    ) -> Option<End> {
        // The wall clock is read once a frame too: the parking windows' milliseconds and the
        // audit trail's stamp are both taken from it.
        let now = Now::at(self.app.uptime_at(arrived), crate::clock::unix_micros());
        match self.frames.check(frame, now.mono) {
            Checked::Ignore => None,
            Checked::Closed => Some(End::ClientClosed),
            Checked::Flooding => {
                self.app
                    .metrics
                    .message_type(crate::metrics::MessageType::Invalid);
                Some(End::Bye(ByeReason::Flooding, "too many messages"))
            }
            Checked::Refused { id, kind, error } => {
                self.app
                    .metrics
                    .message_type(crate::metrics::MessageType::Invalid);
                let answer = core.refuse_frame(id, kind, error, now);
                self.send_all(std::slice::from_ref(&answer))
            }
            Checked::Message(message) => {
                // Most steps need no store and are handled here and now; the others run as
                // a future of their own while queued answers keep going out.
                let messages = match core.handle_now(message, now) {
                    Step::Answered(messages) => messages,
                    Step::StoreVisitsFirst(messages) => {
                        self.conn.writing_while(core.store_visits()).await;
                        messages
                    }
                    Step::NeedsStore(message) => {
                        self.conn
                            .writing_while(core.handle_with_store(message, now))
                            .await
                    }
                };
                self.app.metrics.handled(arrived.elapsed());
                let end = self.send_all(&messages);
                core.recycle(messages);
                end
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Frames = Vec<Result<Message, std::io::Error>>;

    fn peekable(
        frames: Frames,
    ) -> Peekable<futures_util::stream::Iter<std::vec::IntoIter<Result<Message, std::io::Error>>>>
    {
        futures_util::stream::iter(frames).peekable()
    }

    #[test]
    fn a_client_that_closed_or_broke_off_has_left_and_one_that_speaks_or_waits_has_not() {
        assert!(left_already(&mut peekable(vec![Ok(Message::Close(None))])));
        assert!(left_already(&mut peekable(Vec::new())), "end of stream");
        assert!(left_already(&mut peekable(vec![Err(
            std::io::Error::other("reset")
        )])));
        let mut early = peekable(vec![Ok(Message::Text("{}".into()))]);
        assert!(!left_already(&mut early));
        assert!(
            matches!(
                early.next().now_or_never(),
                Some(Some(Ok(Message::Text(_))))
            ),
            "the early frame is still there for the session"
        );
        let mut quiet =
            futures_util::stream::pending::<Result<Message, std::io::Error>>().peekable();
        assert!(!left_already(&mut quiet), "nothing sent yet: still here");
    }
}
