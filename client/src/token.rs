//! HS256 player tokens for tests and tools: minted with a secret (the development one, or the
//! server's own), expired and tampered ones included, as the attack catalogue and the abuse tool
//! need them. The server's rules are in docs/PROTOCOL.md section 2; the server verifies, this
//! only mints. All of it is here, in one file, so it can move to `jsonwebtoken` with the server.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The server's development signing secret (`banter_server::config::DEV_SECRET`).
pub const DEV_SECRET: &str = "banter-development-secret-do-not-use-in-production";

const HEADER: &str = r#"{"alg":"HS256","typ":"JWT"}"#;

fn sign(secret: &str, signing_input: &str) -> String {
    let mut mac = match Hmac::<Sha256>::new_from_slice(secret.as_bytes()) {
        Ok(mac) => mac,
        // HMAC takes keys of any length.
        Err(_) => return String::new(),
    };
    mac.update(signing_input.as_bytes());
    URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
}

/// A token for `player` signed with `secret`, issued at `iat` and expiring at `exp` (seconds
/// since the Unix epoch).
pub fn mint(secret: &str, player: &str, iat: u64, exp: u64) -> String {
    let claims = serde_json::json!({ "sub": player, "iat": iat, "exp": exp }).to_string();
    let input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(HEADER),
        URL_SAFE_NO_PAD.encode(claims)
    );
    let signature = sign(secret, &input);
    format!("{input}.{signature}")
}

/// An unsigned token (`"alg":"none"`) for `player`.
pub fn unsigned(player: &str, now: u64) -> String {
    let claims = serde_json::json!({ "sub": player, "iat": now, "exp": now + 3600 }).to_string();
    format!(
        "{}.{}.",
        URL_SAFE_NO_PAD.encode(r#"{"alg":"none","typ":"JWT"}"#),
        URL_SAFE_NO_PAD.encode(claims)
    )
}

/// `token` with its claims swapped for another player's, keeping the original signature.
pub fn with_subject(token: &str, player: &str, now: u64) -> String {
    let mut parts = token.split('.');
    let (header, signature) = (
        parts.next().unwrap_or_default(),
        parts.nth(1).unwrap_or_default(),
    );
    let claims = serde_json::json!({ "sub": player, "iat": now, "exp": now + 3600 }).to_string();
    format!("{header}.{}.{signature}", URL_SAFE_NO_PAD.encode(claims))
}

/// `token` with one character of its signature changed.
pub fn tampered(token: &str) -> String {
    let mut bytes = token.as_bytes().to_vec();
    if let Some(last) = bytes.last_mut() {
        *last = if *last == b'A' { b'B' } else { b'A' };
    }
    String::from_utf8(bytes).unwrap_or_default()
}

/// Seconds since the Unix epoch, as the server's token check reads the clock.
pub fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims(token: &str) -> serde_json::Value {
        let part = token.split('.').nth(1).expect("claims");
        let bytes = URL_SAFE_NO_PAD.decode(part).expect("base64url");
        serde_json::from_slice(&bytes).expect("json")
    }

    #[test]
    fn a_minted_token_has_three_parts_and_the_claims() {
        let token = mint(DEV_SECRET, "p1", 10, 20);
        assert_eq!(token.split('.').count(), 3);
        assert!(!token.contains('='), "no padding");
        assert_eq!(claims(&token)["sub"], "p1");
        assert_eq!(claims(&token)["exp"], 20);
        // Deterministic: same input, same signature; another secret, another one.
        assert_eq!(token, mint(DEV_SECRET, "p1", 10, 20));
        assert_ne!(
            token,
            mint("another-secret-of-at-least-32-bytes!", "p1", 10, 20)
        );
    }

    #[test]
    fn tampering_changes_only_what_it_says() {
        let token = mint(DEV_SECRET, "p1", 10, 20);
        let t = tampered(&token);
        assert_eq!(t.len(), token.len());
        assert_ne!(t, token);
        let other = with_subject(&token, "p2", 10);
        assert_eq!(claims(&other)["sub"], "p2");
        assert_eq!(other.rsplit('.').next(), token.rsplit('.').next());
        assert!(unsigned("p1", 10).ends_with('.'));
    }
}
