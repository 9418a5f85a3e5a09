//! The provider's two keys: the sr25519 account that signs transactions and proofs, and the
//! ed25519 libp2p identity the trainers know each other by. The chain binds the second to
//! the first at registration (a signature of the libp2p key over the account id).

use std::{io::Read, path::Path, str::FromStr};

use libp2p::identity::Keypair as P2pKeypair;
use subxt_signer::{sr25519::Keypair, SecretUri};

use super::{ChainError, Result};

fn key_error(what: impl std::fmt::Display) -> ChainError {
	ChainError::Key(what.to_string())
}

/// The account key of a secret: a secret URI (`//Alice`, a mnemonic with optional
/// derivation path) or a `0x`-prefixed 32-byte seed.
pub fn account_from_secret(secret: &str) -> Result<Keypair> {
	let secret = secret.trim();
	if let Some(hex_seed) = secret.strip_prefix("0x") {
		let bytes = hex::decode(hex_seed).map_err(|e| key_error(format!("seed: {e}")))?;
		let seed: [u8; 32] = bytes
			.try_into()
			.map_err(|b: Vec<u8>| key_error(format!("seed has {} bytes, not 32", b.len())))?;
		return Keypair::from_secret_key(seed).map_err(key_error);
	}
	let uri = SecretUri::from_str(secret).map_err(|e| key_error(format!("secret URI: {e}")))?;
	Keypair::from_uri(&uri).map_err(key_error)
}

/// The account key kept in `path` (a secret as [`account_from_secret`] reads it).
pub fn account_from_file(path: &Path) -> Result<Keypair> {
	let text = std::fs::read_to_string(path)
		.map_err(|e| key_error(format!("reading {}: {e}", path.display())))?;
	account_from_secret(&text).map_err(|e| key_error(format!("{}: {e}", path.display())))
}

/// 32 bytes from the operating system's random source.
fn os_random() -> Result<[u8; 32]> {
	let mut bytes = [0u8; 32];
	std::fs::File::open("/dev/urandom")
		.and_then(|mut f| f.read_exact(&mut bytes))
		.map_err(|e| key_error(format!("reading /dev/urandom: {e}")))?;
	Ok(bytes)
}

/// Writes `contents` to a new file only its owner can read; fails if it exists, so a key is
/// never overwritten.
fn write_secret(path: &Path, contents: &[u8]) -> Result<()> {
	use std::{io::Write, os::unix::fs::OpenOptionsExt};
	if let Some(dir) = path.parent() {
		std::fs::create_dir_all(dir)
			.map_err(|e| key_error(format!("creating {}: {e}", dir.display())))?;
	}
	let mut file = std::fs::OpenOptions::new()
		.write(true)
		.create_new(true)
		.mode(0o600)
		.open(path)
		.map_err(|e| key_error(format!("creating {}: {e}", path.display())))?;
	file.write_all(contents).map_err(|e| key_error(format!("writing {}: {e}", path.display())))
}

/// Creates a new random account key file at `path` (refusing to overwrite one).
pub fn generate_account_file(path: &Path) -> Result<Keypair> {
	let seed = os_random()?;
	write_secret(path, format!("0x{}\n", hex::encode(seed)).as_bytes())?;
	Keypair::from_secret_key(seed).map_err(key_error)
}

/// The libp2p identity kept in `path` (protobuf-encoded, as libp2p writes it), created with a
/// fresh ed25519 key when the file does not exist.
pub fn p2p_key(path: &Path) -> Result<P2pKeypair> {
	if path.exists() {
		let bytes = std::fs::read(path)
			.map_err(|e| key_error(format!("reading {}: {e}", path.display())))?;
		let key = P2pKeypair::from_protobuf_encoding(&bytes)
			.map_err(|e| key_error(format!("{}: {e}", path.display())))?;
		if key.public().clone().try_into_ed25519().is_err() {
			return Err(key_error(format!("{}: not an ed25519 key", path.display())));
		}
		return Ok(key);
	}
	let key = P2pKeypair::generate_ed25519();
	let bytes = key.to_protobuf_encoding().map_err(key_error)?;
	write_secret(path, &bytes)?;
	Ok(key)
}

/// The 32-byte ed25519 public key of a libp2p identity.
pub fn p2p_public(key: &P2pKeypair) -> Result<[u8; 32]> {
	key.public()
		.try_into_ed25519()
		.map(|k| k.to_bytes())
		.map_err(|_| key_error("the libp2p key is not ed25519"))
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn secrets_parse_and_bad_ones_say_why() {
		let alice = account_from_secret("//Alice").unwrap();
		assert_eq!(
			alice.public_key().to_account_id(),
			subxt_signer::sr25519::dev::alice().public_key().to_account_id()
		);
		let seed = format!("0x{}", "01".repeat(32));
		let a = account_from_secret(&seed).unwrap();
		let b = account_from_secret(&format!("  {seed}\n")).unwrap();
		assert_eq!(a.public_key().0, b.public_key().0);
		let short = account_from_secret("0x0102").err().unwrap().to_string();
		assert!(short.contains("2 bytes"), "{short}");
		let not_hex = account_from_secret("0xzz").err().unwrap().to_string();
		assert!(not_hex.contains("seed"), "{not_hex}");
	}

	#[test]
	fn key_files_are_created_once_and_read_back() {
		let dir = tempfile::tempdir().unwrap();
		let account = dir.path().join("keys/account.key");
		let made = generate_account_file(&account).unwrap();
		let read = account_from_file(&account).unwrap();
		assert_eq!(made.public_key().0, read.public_key().0);
		assert!(generate_account_file(&account).is_err(), "an existing key is never overwritten");
		use std::os::unix::fs::PermissionsExt;
		let mode = std::fs::metadata(&account).unwrap().permissions().mode();
		assert_eq!(mode & 0o077, 0, "key readable by others: {mode:o}");

		let p2p = dir.path().join("keys/p2p.key");
		let first = p2p_key(&p2p).unwrap();
		let again = p2p_key(&p2p).unwrap();
		assert_eq!(first.public(), again.public());
		std::fs::write(&p2p, b"garbage").unwrap();
		let err = p2p_key(&p2p).err().unwrap().to_string();
		assert!(err.contains("p2p.key"), "{err}");
	}
}
