//! A channel over one WebSocket (PROTOCOL.md section 16.6): the first frame says the channel,
//! every client frame is a batch without numbers, every server frame the events it caused or
//! that came. The channel lives as long as the socket.

use axum::extract::State;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::http::HeaderMap;
use axum::response::Response;
use banter_protocol::channel::{self as wire, Frame};
use futures_util::{SinkExt, StreamExt};
use serde_json::value::RawValue;

use super::routes::{check_batch, game_server, read_json};
use crate::api_error::ApiError;
use crate::app::SharedApp;
use crate::channels::{self, ChannelHandle, Ending};

pub async fn upgrade(
    State(app): State<SharedApp>,
    headers: HeaderMap,
    upgrade: Result<WebSocketUpgrade, axum::extract::ws::rejection::WebSocketUpgradeRejection>,
) -> Result<Response, ApiError> {
    let upgrade = upgrade?;
    let server = game_server(&app, &headers).await?;
    let channel = super::open(&app, server, None).map_err(|e| ApiError::Internal {
        reference: crate::incident::report("opening a channel", &e),
    })?;
    Ok(upgrade
        .max_message_size(wire::MAX_REQUEST_BYTES)
        .max_frame_size(wire::MAX_REQUEST_BYTES)
        .on_upgrade(move |socket| serve(app, channel, socket)))
}

async fn serve(app: SharedApp, channel: std::sync::Arc<ChannelHandle>, socket: WebSocket) {
    let (mut sink, mut stream) = socket.split();
    let opened = wire::ChannelOpened {
        channel: channel.id.clone(),
        limits: super::limits(&app),
    };
    let first = serde_json::to_string(&opened).unwrap_or_default();
    if sink.send(Message::Text(first.into())).await.is_err() {
        channel.end(Ending::Dropped);
        return;
    }
    let mut changed = channel.subscribe();
    loop {
        tokio::select! {
            biased;
            _ = channel.ended().cancelled() => break,
            frame = stream.next() => {
                let Some(Ok(frame)) = frame else {
                    channel.end(Ending::Dropped);
                    break;
                };
                match frame {
                    Message::Text(text) => {
                        if let Err(e) = apply(&channel, text.as_bytes()).await
                            && sink.send(refusal(&e)).await.is_err()
                        {
                            channel.end(Ending::Dropped);
                            break;
                        }
                    }
                    Message::Binary(_) => {
                        let refused = ApiError::BadRequest("binary frames are not part of the protocol".into());
                        let _ = sink.send(refusal(&refused)).await;
                    }
                    Message::Close(_) => {
                        channel.end(Ending::Dropped);
                        break;
                    }
                    Message::Ping(_) | Message::Pong(_) => {}
                }
            }
            seen = changed.changed() => if seen.is_err() { break },
        }
        // Whatever is queued now goes out: the socket delivers, so nothing waits for an ack.
        let drained = channel.events().drain();
        if drained.count > 0 {
            let frame = format!(r#"{{"events":[{}]}}"#, drained.events);
            if sink.send(Message::Text(frame.into())).await.is_err() {
                channel.end(Ending::Dropped);
                break;
            }
        }
    }
    // The last events (a `bye` at shutdown), then why it ended.
    let drained = channel.events().drain();
    if drained.count > 0 {
        let frame = format!(r#"{{"events":[{}]}}"#, drained.events);
        let _ = sink.send(Message::Text(frame.into())).await;
    }
    if channel.ending() == Some(Ending::Revoked) {
        let refused = ApiError::BadCredential("the credential was revoked".into());
        let _ = sink.send(refusal(&refused)).await;
        let _ = sink
            .send(Message::Close(Some(CloseFrame {
                code: 1008,
                reason: "the credential was revoked".into(),
            })))
            .await;
    } else {
        let _ = sink.send(Message::Close(None)).await;
    }
}

/// A refusal as the channel WebSocket sends it: the HTTP error's JSON body in a text frame.
fn refusal(error: &ApiError) -> Message {
    Message::Text(
        serde_json::to_string(&error.body())
            .unwrap_or_default()
            .into(),
    )
}

async fn apply(channel: &ChannelHandle, text: &[u8]) -> Result<(), ApiError> {
    let frame: Frame<Box<RawValue>> = read_json(text)?;
    check_batch(&frame.positions, &frame.items, &frame.parties)?;
    // Nothing to refuse without numbers: a WebSocket batch is applied or the channel ended.
    let _ = channel
        .apply(channels::Batch {
            seq: None,
            ack: 0,
            positions: frame.positions,
            items: frame.items,
            parties: frame.parties,
        })
        .await;
    Ok(())
}
