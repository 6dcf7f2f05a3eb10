//! Cheats on who a player is: tokens for another player (claims swapped, another secret),
//! tampered, unsigned (`alg: none`) and expired tokens, and a player's token on the trusted
//! endpoints (`/internal/events`, `/admin/reload`). Each is aimed at a victim, a real player,
//! whose profile must be the same afterwards.

use std::sync::Arc;

use futures_util::future::BoxFuture;

use super::cheater::{Cheat, CheatFuture, Observed};
use super::{AttackOptions, Outcome};
use crate::auth;
use crate::connection::{Connection, upgrade_status};
use crate::error::{Result, SimError};
use crate::facts::{ClientFacts, Snapshot};
use crate::session::{Login, device_login};

/// A secret an attacker might guess, that is not the server's.
const GUESSED_SECRET: &str = "an-attackers-guess-at-the-secret-000000";

/// The victim's profile as a new session's `welcome` reports it.
async fn profile(options: &AttackOptions, login: &Login) -> Result<Snapshot> {
    let connection = Connection::connect(&options.endpoint, &login.token).await?;
    let mut facts = ClientFacts::fresh(&options.content);
    facts.set_profile(&connection.welcome.profile);
    connection.close().await;
    Ok(facts.snapshot())
}

/// What an upgrade's status says: `101` got a session.
fn upgraded(status: u16) -> Outcome {
    if status == 101 {
        Outcome::Accepted
    } else {
        Outcome::Http(status)
    }
}

/// What an HTTP call's status says: anything under 400 was served.
fn served(status: u16) -> Outcome {
    if status < 400 {
        Outcome::Accepted
    } else {
        Outcome::Http(status)
    }
}

/// A cheat against a victim `tag` (a real player with a token): its profile before, `attack`,
/// and its profile after.
fn against_victim<F>(options: &Arc<AttackOptions>, tag: &'static str, attack: F) -> CheatFuture
where
    F: for<'a> FnOnce(&'a AttackOptions, &'a Login) -> BoxFuture<'a, Result<Outcome>>
        + Send
        + 'static,
{
    let options = options.clone();
    Box::pin(async move {
        let device = format!("sim-attack-{}-{tag}", options.run_id);
        let victim = device_login(&options.endpoint, &device).await?;
        let before = profile(&options, &victim).await?;
        let got = attack(&options, &victim).await?;
        let after = profile(&options, &victim).await;
        Ok(Observed { got, before, after })
    })
}

/// A token forged by `forge` from the victim's login and an attacker's own, used to upgrade.
fn forged_token(
    options: &Arc<AttackOptions>,
    tag: &'static str,
    forge: fn(&Login, &Login) -> String,
) -> CheatFuture {
    against_victim(options, tag, move |options, victim| {
        Box::pin(async move {
            let device = format!("sim-attack-{}-{tag}-a", options.run_id);
            let attacker = device_login(&options.endpoint, &device).await?;
            let token = forge(victim, &attacker);
            Ok(upgraded(upgrade_status(&options.endpoint, &token).await?))
        })
    })
}

/// A player's token on a trusted endpoint, which takes only the service key.
fn trusted_endpoint(
    options: &Arc<AttackOptions>,
    tag: &'static str,
    path: &'static str,
    body: fn(&AttackOptions, &Login) -> String,
) -> CheatFuture {
    against_victim(options, tag, move |options, victim| {
        Box::pin(async move {
            let (status, _) = options
                .endpoint
                .post_json(path, Some(&victim.token), &body(options, victim))
                .await?;
            Ok(served(status))
        })
    })
}

pub(super) fn cheats(options: &Arc<AttackOptions>) -> Vec<Cheat> {
    vec![
        Cheat {
            name: "token for another player (claims swapped)",
            expected: Outcome::Http(401),
            run: forged_token(options, "swap", |victim, attacker| {
                auth::with_subject(&attacker.token, &victim.player, auth::unix_now())
            }),
        },
        Cheat {
            name: "token for another player (wrong secret)",
            expected: Outcome::Http(401),
            run: forged_token(options, "wrong-secret", |victim, _| {
                let now = auth::unix_now();
                auth::mint(GUESSED_SECRET, &victim.player, now, now + 600)
            }),
        },
        Cheat {
            name: "tampered token",
            expected: Outcome::Http(401),
            run: forged_token(options, "tampered", |victim, _| {
                auth::tampered(&victim.token)
            }),
        },
        Cheat {
            name: "unsigned token (alg none)",
            expected: Outcome::Http(401),
            run: forged_token(options, "alg-none", |victim, _| {
                auth::unsigned(&victim.player, auth::unix_now())
            }),
        },
        Cheat {
            name: "expired token",
            expected: Outcome::Http(401),
            run: against_victim(options, "expired", |options, victim| {
                Box::pin(expired(options, victim))
            }),
        },
        Cheat {
            name: "player token on /internal/events",
            expected: Outcome::Http(403),
            run: trusted_endpoint(options, "events-token", "/internal/events", |o, victim| {
                serde_json::json!({
                    "event_id": format!("sim-attack-{}-events", o.run_id),
                    "player": victim.player,
                    "kind": "item_found",
                    "item": "Gold",
                    "island": "brinehollow",
                })
                .to_string()
            }),
        },
        Cheat {
            name: "player token on /admin/reload",
            expected: Outcome::Http(403),
            run: trusted_endpoint(options, "reload-token", "/admin/reload", |_, _| {
                String::new()
            }),
        },
    ]
}

/// An expired token minted with the server's secret; first, as a control, a fresh one minted
/// with the same secret must be accepted, or the expired one proves nothing.
async fn expired(options: &AttackOptions, victim: &Login) -> Result<Outcome> {
    let now = auth::unix_now();
    let fresh = auth::mint(&options.auth_secret, &victim.player, now, now + 600);
    if upgrade_status(&options.endpoint, &fresh).await? != 101 {
        return Err(SimError::Other(
            "a token minted with --auth-secret is refused: pass the server's secret".to_owned(),
        ));
    }
    let token = auth::mint(&options.auth_secret, &victim.player, now - 7200, now - 60);
    Ok(upgraded(upgrade_status(&options.endpoint, &token).await?))
}
