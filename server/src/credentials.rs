//! Game-server credentials (PROTOCOL.md section 16.1): minted from the operating system's random
//! source, stored as a SHA-256 of their secret, read back from a bearer header, and scoped to the
//! players a game server may speak for. No I/O but the random source; the store keeps them.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

/// How every credential starts: `bgs_<id>_<secret>`.
const CREDENTIAL_PREFIX: &str = "bgs_";
/// How every credential id starts.
const ID_PREFIX: &str = "gs_";
/// Random bytes in a credential's secret (43 base64url characters).
const SECRET_BYTES: usize = 32;
/// Random bytes in a credential id (16 hex digits).
const ID_BYTES: usize = 8;
/// The most scope prefixes a credential holds.
pub const MAX_PREFIXES: usize = 16;
/// The longest name and scope prefix.
pub const MAX_NAME: usize = 64;

/// A game server (or fleet) the operator issued a credential to, as stored and listed.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct GameServer {
    pub id: String,
    pub name: String,
    /// The scope: player-id prefixes it may speak for.
    pub players: Vec<String>,
    pub created_at_ms: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revoked_at_ms: Option<i64>,
}

impl GameServer {
    /// True when the credential may speak for `player`.
    pub fn speaks_for(&self, player: &str) -> bool {
        self.players
            .iter()
            .any(|prefix| player.starts_with(prefix.as_str()))
    }

    pub fn revoked(&self) -> bool {
        self.revoked_at_ms.is_some()
    }
}

/// A freshly minted credential: what the store keeps and what the operator is shown once.
#[derive(Clone, Debug)]
pub struct Minted {
    pub id: String,
    /// Hex SHA-256 of the secret: all the store ever holds of it.
    pub secret_sha256: String,
    /// `bgs_<id>_<secret>`, shown once.
    pub credential: String,
}

/// Why a credential or its request was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CredentialError {
    #[error("not a game-server credential")]
    Malformed,
    #[error("the operating system's random source failed: {0}")]
    Random(String),
}

/// Why an issue request was refused: the field and what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{field}`: {problem}")]
pub struct ScopeError {
    pub field: &'static str,
    pub problem: String,
}

/// Mints a credential with a fresh id and secret.
pub fn mint() -> Result<Minted, CredentialError> {
    let mut id = [0u8; ID_BYTES];
    let mut secret = [0u8; SECRET_BYTES];
    getrandom::fill(&mut id).map_err(|e| CredentialError::Random(e.to_string()))?;
    getrandom::fill(&mut secret).map_err(|e| CredentialError::Random(e.to_string()))?;
    let id = format!("{ID_PREFIX}{}", hex(&id));
    let secret = URL_SAFE_NO_PAD.encode(secret);
    Ok(Minted {
        secret_sha256: secret_sha256(&secret),
        credential: format!("{CREDENTIAL_PREFIX}{}_{secret}", &id[ID_PREFIX.len()..]),
        id,
    })
}

/// An unguessable channel id: `ch_` and 22 base64url characters.
pub fn channel_id() -> Result<String, CredentialError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| CredentialError::Random(e.to_string()))?;
    Ok(format!("ch_{}", URL_SAFE_NO_PAD.encode(bytes)))
}

/// A credential read from a bearer header: its id (`gs_...`) and secret.
#[derive(Debug, PartialEq, Eq)]
pub struct Presented<'a> {
    pub id: String,
    pub secret: &'a str,
}

/// Reads `bgs_<16 hex>_<43 base64url>`; anything else is [`CredentialError::Malformed`] before
/// the store is asked.
pub fn parse(credential: &str) -> Result<Presented<'_>, CredentialError> {
    let rest = credential
        .strip_prefix(CREDENTIAL_PREFIX)
        .ok_or(CredentialError::Malformed)?;
    let (id, secret) = rest.split_once('_').ok_or(CredentialError::Malformed)?;
    let id_ok = id.len() == ID_BYTES * 2 && id.bytes().all(|b| b.is_ascii_hexdigit());
    let secret_ok = secret.len() == 43
        && secret
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if !(id_ok && secret_ok) {
        return Err(CredentialError::Malformed);
    }
    Ok(Presented {
        id: format!("{ID_PREFIX}{id}"),
        secret,
    })
}

/// True when a credential id looks like one (`gs_` and 16 hex digits): a path segment that is
/// not one is `404` before the store is asked.
pub fn looks_like_id(id: &str) -> bool {
    id.strip_prefix(ID_PREFIX)
        .is_some_and(|hex| hex.len() == ID_BYTES * 2 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The hex SHA-256 the store keeps of a secret.
pub fn secret_sha256(secret: &str) -> String {
    hex(&Sha256::digest(secret.as_bytes()))
}

/// True when `secret` hashes to `stored`, compared in constant time.
pub fn secret_matches(secret: &str, stored: &str) -> bool {
    crate::auth::same_secret(&secret_sha256(secret), stored)
}

/// Checks an issue request's name and scope.
pub fn check_issue(name: &str, players: &[String]) -> Result<(), ScopeError> {
    let name_ok = !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if !name_ok {
        return Err(ScopeError {
            field: "name",
            problem: "1 to 64 letters, digits, `-`, `_` or `.`".into(),
        });
    }
    if players.is_empty() || players.len() > MAX_PREFIXES {
        return Err(ScopeError {
            field: "players",
            problem: format!("1 to {MAX_PREFIXES} player-id prefixes"),
        });
    }
    if let Some(bad) = players.iter().find(|p| !crate::auth::valid_player_id(p)) {
        return Err(ScopeError {
            field: "players",
            problem: format!(
                "`{}` is not a player-id prefix (1 to 64 letters, digits, `-`, `_`)",
                banter_protocol::quoted_input(bad)
            ),
        });
    }
    Ok(())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_minted_credential_reads_back_and_matches_only_its_own_hash() {
        let minted = mint().expect("random source");
        let presented = parse(&minted.credential).expect("well-formed");
        assert_eq!(presented.id, minted.id);
        assert!(looks_like_id(&minted.id));
        assert!(secret_matches(presented.secret, &minted.secret_sha256));
        let other = mint().expect("random source");
        assert!(!secret_matches(presented.secret, &other.secret_sha256));
        assert_ne!(minted.credential, other.credential);
        assert!(!minted.secret_sha256.contains(presented.secret));
    }

    #[test]
    fn anything_but_a_credential_is_malformed() {
        let minted = mint().expect("random source");
        for bad in [
            "",
            "bgs_",
            "bgs_zz_x",
            "secret",
            &minted.credential[1..],
            &format!("{}x", minted.credential),
            &minted.credential.replacen('_', "-", 1),
            "bgs_0123456789abcdef_!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!",
        ] {
            assert_eq!(parse(bad), Err(CredentialError::Malformed), "{bad:?}");
        }
        assert!(!looks_like_id("gs_xyz"));
        assert!(!looks_like_id("0123456789abcdef"));
    }

    fn refused_field(name: &str, players: &[String]) -> &'static str {
        check_issue(name, players).map_or_else(|e| e.field, |()| "accepted")
    }

    #[test]
    fn a_scope_is_prefixes_of_player_ids() {
        let server = GameServer {
            id: "gs_0".into(),
            name: "eu".into(),
            players: vec!["rbx-".into(), "steam_".into()],
            created_at_ms: 0,
            revoked_at_ms: None,
        };
        assert!(server.speaks_for("rbx-1234"));
        assert!(server.speaks_for("steam_7"));
        assert!(!server.speaks_for("rbx1234"));
        assert!(!server.speaks_for("d-0011"));
        assert!(check_issue("seaside-eu.1", &["rbx-".into()]).is_ok());
        assert_eq!(refused_field("", &["rbx-".into()]), "name");
        assert_eq!(refused_field("a b", &["rbx-".into()]), "name");
        assert_eq!(refused_field("eu", &[]), "players");
        assert_eq!(refused_field("eu", &["".into()]), "players");
        assert_eq!(refused_field("eu", &["a:b".into()]), "players");
        let seventeen: Vec<String> = (0..17).map(|i| format!("p{i}")).collect();
        assert_eq!(refused_field("eu", &seventeen), "players");
    }
}
