//! A session's life outside its messages, the same for a WebSocket (`socket.rs`) and a player on
//! a game-server channel (`channel/`): begin (counted, numbered, known to the hub), load and
//! claim the player, and finish (the claim released, the hub and the parking lot told).

use super::core::Now;
use super::refusal::{ChannelError, Refusal};
use crate::app::SharedApp;
use crate::store::PlayerRecord;

pub use crate::hub::Deliver;

/// The time now, both ways the core takes it, read for the core (which reads no clock).
pub fn now(app: &SharedApp) -> Now {
    Now::at(app.now(), crate::clock::unix_micros())
}

/// Who carries a session: the player's own WebSocket, or a game server's channel (its
/// credential id).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Carrier<'a> {
    Direct,
    Channel(&'a str),
}

impl<'a> Carrier<'a> {
    pub fn credential(self) -> Option<&'a str> {
        match self {
            Carrier::Direct => None,
            Carrier::Channel(id) => Some(id),
        }
    }
}

/// A new session of `player`: counted, numbered and registered with the hub, which sends its
/// control messages to `deliver`. Returns its number.
pub fn begin(app: &SharedApp, player: &str, deliver: Deliver, carrier: Carrier<'_>) -> u64 {
    app.metrics.session_opened();
    let id = app.next_session_id();
    app.parked.session_started(player);
    app.hub
        .register_carried(player, id, deliver, carrier.credential());
    id
}

/// Loads the player and claims it for session `id`. A player whose live session a game server's
/// channel (of another credential) carries is refused with `carried_elsewhere`: neither another
/// game's channel nor the player's own client may take it.
pub async fn load_and_claim(
    app: &SharedApp,
    player: &str,
    id: u64,
    carrier: Carrier<'_>,
) -> Result<PlayerRecord, Refusal> {
    if app
        .hub
        .carried_elsewhere(player, carrier.credential())
        .is_some()
    {
        return Err(ChannelError::CarriedElsewhere(player.to_owned()).into());
    }
    let record = app.store.load_player(player).await?;
    claim(app, player, id, carrier).await?;
    Ok(record)
}

/// Claims the player for this session. The store's claim epoch is the one source of truth for
/// which of a player's sessions stays: the hub closes every local session with an older claim,
/// and the claims watcher (`lib.rs`) those that another instance's newer claim replaced. With
/// coordination off (one instance, benchmarks), the session number stands in for the epoch.
pub async fn claim(
    app: &SharedApp,
    player: &str,
    id: u64,
    carrier: Carrier<'_>,
) -> Result<(), Refusal> {
    let key = app.session_key(id);
    if !app.config.coordinate_sessions {
        app.hub.claimed(player, id, &key, id as i64);
        return Ok(());
    }
    let claim = app
        .store
        .claim_session_for(player, &key, &app.instance, carrier.credential())
        .await?;
    app.hub.claimed(player, id, &key, claim.epoch);
    Ok(())
}

/// The end of session `id`: its claim released (if it made one), the hub and the parking lot
/// told, the count down.
pub async fn finish(app: &SharedApp, player: &str, id: u64, claimed: bool) {
    if app.config.coordinate_sessions && claimed {
        // Frees the player for a quick reconnect anywhere; a replaced session holds no claim,
        // so this releases nothing then. A failure only leaves a row the next claim overwrites.
        if let Err(e) = app
            .store
            .release_session(player, &app.session_key(id))
            .await
        {
            tracing::debug!(%player, error = %e, "session claim not released");
        }
    }
    app.parked.session_ended(player);
    app.hub.unregister(player, id);
    app.metrics.session_closed();
}
