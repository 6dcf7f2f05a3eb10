//! HS256 player tokens for tests and tools: minted with a secret (the development one, or the
//! server's own), expired and tampered ones included, as the attack catalogue and the abuse tool
//! need them. The server's rules are in docs/PROTOCOL.md section 2; the server verifies, this
//! only mints. A good token is minted by `jsonwebtoken`, as the server's own are; the broken
//! ones (unsigned, re-subjected, tampered) are built by hand, since no JWT library makes them.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, EncodingKey, Header};

/// The server's development signing secret (`banter_server::config::DEV_SECRET`).
pub const DEV_SECRET: &str = "banter-development-secret-do-not-use-in-production";

#[derive(serde::Serialize)]
struct Claims<'a> {
    sub: &'a str,
    iat: u64,
    exp: u64,
}

/// A token for `player` signed with `secret`, issued at `iat` and expiring at `exp` (seconds
/// since the Unix epoch): header `{"typ":"JWT","alg":"HS256"}`, claims `sub`, `iat`, `exp`.
pub fn mint(secret: &str, player: &str, iat: u64, exp: u64) -> String {
    let claims = Claims {
        sub: player,
        iat,
        exp,
    };
    let key = EncodingKey::from_secret(secret.as_bytes());
    // Encoding these claims with an HMAC key cannot fail.
    jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &key).unwrap_or_default()
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
    fn a_minted_token_is_the_servers_own_byte_for_byte() {
        use banter_server::auth::TokenKey;
        let now = 1_800_000_000;
        let ours = mint(DEV_SECRET, "tester-01", now, now + 3600);
        let server = TokenKey::new(DEV_SECRET);
        assert_eq!(ours, server.mint("tester-01", now, 3600));
        assert_eq!(
            server.verify(&ours, now).map(|c| c.sub),
            Ok("tester-01".into())
        );
        assert!(server.verify(&tampered(&ours), now).is_err());
        assert!(server.verify(&unsigned("tester-01", now), now).is_err());
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
