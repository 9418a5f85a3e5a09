//! Scenario files: which links the shaper degrades, and how that changes round by round.
//!
//! ```toml
//! uplink_mbit = 20            # what each trainer sends, to all peers together (optional)
//!
//! [default]                  # every link (optional; a perfect link otherwise)
//! latency_ms = 50            # one way: 100 ms round trip
//! bandwidth_mbit = 50
//! loss = 0.01
//!
//! [[link]]                   # links touching one peer ("*": every peer) ...
//! peer = "12D3KooW..."
//! latency_ms = 150
//! bandwidth_mbit = 10
//!
//! [[link]]                   # ... or the link between two peers, from a round on
//! between = ["12D3KooW...", "12D3KooW..."]
//! from_round = 5
//! until_round = 8            # exclusive; open-ended without it
//! partitioned = true
//!
//! [[disconnect]]             # break the connections to a peer once, at a round
//! peer = "12D3KooW..."
//! at_round = 3
//!
//! [[lost_commitment]]        # gossip loses a peer's commitment of a round on its way to
//! of = "12D3KooW..."         # another (the one `at` never hears it)
//! at = "12D3KooW..."
//! round = 2
//!
//! [[late_attestation]]       # a peer's attestation of a round reaches another late (as
//! of = "12D3KooW..."         # when its fetches ran long over a slow link)
//! at = "12D3KooW..."
//! round = 2
//! delay_ms = 3000
//!
//! [[late_commit]]            # a peer commits its update of a round this long after the
//! peer = "12D3KooW..."       # round's commit deadline (a starved machine whose steps ran
//! round = 2                  # over); deadline schedules only
//! after_deadline_ms = 2000
//!
//! [[stalled_loop]]           # a peer's round loop handles no network event from its
//! peer = "12D3KooW..."       # commitment of a round until this long after the round's
//! round = 2                  # commit deadline (a machine starved of CPU while it
//! after_deadline_ms = 2000   # collects); deadline schedules only
//! ```
//!
//! Every trainer of a run reads the same file and applies the rules that involve it: the
//! last rule matching a link and active in the current round defines that link, the default
//! otherwise.

use std::{path::Path, str::FromStr, time::Duration};

use grid_primitives::job::RoundIndex;
use libp2p::PeerId;
use serde::Deserialize;

use super::shaper::LinkSpec;

/// A scenario file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
	/// The file cannot be read.
	#[error("reading scenario {path}: {source}")]
	Io {
		/// The file.
		path: String,
		/// The I/O error.
		source: std::io::Error,
	},
	/// The TOML is malformed or has unknown fields.
	#[error("scenario is not valid TOML for a scenario: {0}")]
	Parse(String),
	/// A value is out of range or a peer id is malformed.
	#[error("scenario {what}: {reason}")]
	Invalid {
		/// Which entry.
		what: String,
		/// What is wrong.
		reason: String,
	},
}

/// Who a rule applies to.
#[derive(Clone, Debug, PartialEq)]
pub enum Target {
	/// Every link.
	All,
	/// Every link touching this peer.
	Peer(PeerId),
	/// The link between these two peers.
	Between(PeerId, PeerId),
}

impl Target {
	fn matches(&self, me: &PeerId, remote: &PeerId) -> bool {
		match self {
			Target::All => true,
			Target::Peer(p) => p == me || p == remote,
			Target::Between(a, b) => (a == me && b == remote) || (a == remote && b == me),
		}
	}
}

/// A link setting active in a range of rounds.
#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
	/// Which links.
	pub target: Target,
	/// First round it applies to.
	pub from_round: RoundIndex,
	/// First round it no longer applies to.
	pub until_round: Option<RoundIndex>,
	/// The link's properties.
	pub spec: LinkSpec,
}

/// A one-time break of a peer's connections.
#[derive(Clone, Debug, PartialEq)]
pub struct Disconnect {
	/// The peer.
	pub peer: PeerId,
	/// The round at whose start it happens.
	pub at_round: RoundIndex,
}

/// One peer's gossip message of one round, on its way to another peer: what a
/// `lost_commitment` or `late_attestation` entry names.
#[derive(Clone, Debug, PartialEq)]
pub struct GossipMessage {
	/// Whose message.
	pub of: PeerId,
	/// Who it is on its way to.
	pub at: PeerId,
	/// Of which round.
	pub round: RoundIndex,
}

impl GossipMessage {
	fn is(&self, me: &PeerId, of: &PeerId, round: RoundIndex) -> bool {
		&self.at == me && &self.of == of && self.round == round
	}
}

/// An attestation that reaches one peer late.
#[derive(Clone, Debug, PartialEq)]
pub struct LateAttestation {
	/// Which attestation, to whom.
	pub message: GossipMessage,
	/// How late.
	pub delay_ms: u64,
}

/// A trainer that does something of a round late: commits its update (`late_commit`) or
/// handles the network's events again (`stalled_loop`).
#[derive(Clone, Debug, PartialEq)]
pub struct PastDeadline {
	/// The trainer.
	pub peer: PeerId,
	/// The round.
	pub round: RoundIndex,
	/// How long after the round's commit deadline.
	pub after_deadline_ms: u64,
}

/// A parsed, validated scenario.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Scenario {
	/// Each trainer's uplink (`None`: unlimited).
	pub uplink_mbit: Option<f64>,
	/// Applies to links no rule matches.
	pub default: LinkSpec,
	/// In file order; later rules win.
	pub rules: Vec<Rule>,
	/// Breaks.
	pub disconnects: Vec<Disconnect>,
	/// Commitments lost on gossip.
	pub lost_commitments: Vec<GossipMessage>,
	/// Attestations gossip brings late.
	pub late_attestations: Vec<LateAttestation>,
	/// Trainers that commit late.
	pub late_commits: Vec<PastDeadline>,
	/// Trainers whose loops stall past the deadline after committing.
	pub stalled_loops: Vec<PastDeadline>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
	peer: Option<String>,
	between: Option<[String; 2]>,
	#[serde(default)]
	from_round: RoundIndex,
	until_round: Option<RoundIndex>,
	#[serde(default)]
	latency_ms: f64,
	#[serde(default)]
	jitter_ms: f64,
	bandwidth_mbit: Option<f64>,
	#[serde(default)]
	loss: f64,
	#[serde(default)]
	partitioned: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDisconnect {
	peer: String,
	at_round: RoundIndex,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLostCommitment {
	of: String,
	at: String,
	round: RoundIndex,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLateAttestation {
	of: String,
	at: String,
	round: RoundIndex,
	delay_ms: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPastDeadline {
	peer: String,
	round: RoundIndex,
	after_deadline_ms: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
	uplink_mbit: Option<f64>,
	#[serde(default)]
	default: LinkSpec,
	#[serde(default)]
	link: Vec<RawRule>,
	#[serde(default)]
	disconnect: Vec<RawDisconnect>,
	#[serde(default)]
	lost_commitment: Vec<RawLostCommitment>,
	#[serde(default)]
	late_attestation: Vec<RawLateAttestation>,
	#[serde(default)]
	late_commit: Vec<RawPastDeadline>,
	#[serde(default)]
	stalled_loop: Vec<RawPastDeadline>,
}

fn peer(what: &str, s: &str) -> Result<PeerId, ScenarioError> {
	PeerId::from_str(s).map_err(|e| ScenarioError::Invalid {
		what: what.to_string(),
		reason: format!("bad peer id {s:?}: {e}"),
	})
}

fn gossip_message(
	what: &str,
	of: &str,
	at: &str,
	round: RoundIndex,
) -> Result<GossipMessage, ScenarioError> {
	Ok(GossipMessage { of: peer(what, of)?, at: peer(what, at)?, round })
}

/// Parses a list of `kind` entries, each named in errors by its place (`kind 2`).
fn entries<R, T>(
	kind: &str,
	raw: Vec<R>,
	parse: impl Fn(&str, R) -> Result<T, ScenarioError>,
) -> Result<Vec<T>, ScenarioError> {
	raw.into_iter().enumerate().map(|(i, r)| parse(&format!("{kind} {}", i + 1), r)).collect()
}

impl FromStr for Scenario {
	type Err = ScenarioError;

	fn from_str(text: &str) -> Result<Self, ScenarioError> {
		let raw: RawScenario =
			toml::from_str(text).map_err(|e| ScenarioError::Parse(e.to_string()))?;
		raw.default
			.validate()
			.map_err(|reason| ScenarioError::Invalid { what: "default".into(), reason })?;
		if raw.uplink_mbit.is_some_and(|m| !(m.is_finite() && m > 0.0)) {
			let reason = "must be > 0".into();
			return Err(ScenarioError::Invalid { what: "uplink_mbit".into(), reason });
		}
		let mut rules = Vec::new();
		for (i, r) in raw.link.into_iter().enumerate() {
			let what = format!("link {}", i + 1);
			let target = match (r.peer.as_deref(), &r.between) {
				(Some("*"), None) => Target::All,
				(Some(p), None) => Target::Peer(peer(&what, p)?),
				(None, Some([a, b])) => Target::Between(peer(&what, a)?, peer(&what, b)?),
				_ => {
					return Err(ScenarioError::Invalid {
						what,
						reason: "needs exactly one of `peer` and `between`".into(),
					})
				}
			};
			let spec = LinkSpec {
				latency_ms: r.latency_ms,
				jitter_ms: r.jitter_ms,
				bandwidth_mbit: r.bandwidth_mbit,
				loss: r.loss,
				partitioned: r.partitioned,
			};
			spec.validate()
				.map_err(|reason| ScenarioError::Invalid { what: what.clone(), reason })?;
			if r.until_round.is_some_and(|u| u <= r.from_round) {
				return Err(ScenarioError::Invalid {
					what,
					reason: "until_round must be after from_round".into(),
				});
			}
			rules.push(Rule { target, from_round: r.from_round, until_round: r.until_round, spec });
		}
		let disconnects = entries("disconnect", raw.disconnect, |what, d| {
			Ok(Disconnect { peer: peer(what, &d.peer)?, at_round: d.at_round })
		})?;
		let lost_commitments = entries("lost_commitment", raw.lost_commitment, |what, l| {
			gossip_message(what, &l.of, &l.at, l.round)
		})?;
		let late_attestations = entries("late_attestation", raw.late_attestation, |what, l| {
			let message = gossip_message(what, &l.of, &l.at, l.round)?;
			Ok(LateAttestation { message, delay_ms: l.delay_ms })
		})?;
		let past_deadline = |what: &str, l: RawPastDeadline| {
			let (round, after_deadline_ms) = (l.round, l.after_deadline_ms);
			Ok(PastDeadline { peer: peer(what, &l.peer)?, round, after_deadline_ms })
		};
		let late_commits = entries("late_commit", raw.late_commit, past_deadline)?;
		let stalled_loops = entries("stalled_loop", raw.stalled_loop, past_deadline)?;
		Ok(Scenario {
			uplink_mbit: raw.uplink_mbit,
			default: raw.default,
			rules,
			disconnects,
			lost_commitments,
			late_attestations,
			late_commits,
			stalled_loops,
		})
	}
}

impl Scenario {
	/// Reads and validates a scenario file.
	pub fn load(path: &Path) -> Result<Self, ScenarioError> {
		let text = std::fs::read_to_string(path)
			.map_err(|source| ScenarioError::Io { path: path.display().to_string(), source })?;
		text.parse()
	}

	/// The link between `me` and `remote` in `round`.
	pub fn link(&self, me: &PeerId, remote: &PeerId, round: RoundIndex) -> LinkSpec {
		self.rules
			.iter()
			.rev()
			.find(|r| {
				r.target.matches(me, remote)
					&& r.from_round <= round
					&& r.until_round.is_none_or(|u| round < u)
			})
			.map(|r| r.spec)
			.unwrap_or(self.default)
	}

	/// The peers whose connections `me` breaks at the start of `round`.
	pub fn disconnects_at<'a>(
		&'a self,
		me: &'a PeerId,
		round: RoundIndex,
	) -> impl Iterator<Item = Disconnect> + 'a {
		self.disconnects.iter().filter(move |d| d.at_round == round && &d.peer != me).cloned()
	}

	/// Whether `me`'s own connections are all broken at `round` (a disconnect naming it).
	pub fn disconnects_self(&self, me: &PeerId, round: RoundIndex) -> bool {
		self.disconnects.iter().any(|d| d.at_round == round && &d.peer == me)
	}

	/// Whether gossip loses `of`'s commitment of `round` on its way to `me`.
	pub fn loses_commitment(&self, me: &PeerId, of: &PeerId, round: RoundIndex) -> bool {
		self.lost_commitments.iter().any(|l| l.is(me, of, round))
	}

	/// How late gossip brings `of`'s attestation of `round` to `me` (`None`: on time).
	pub fn attestation_delay(
		&self,
		me: &PeerId,
		of: &PeerId,
		round: RoundIndex,
	) -> Option<Duration> {
		self.late_attestations
			.iter()
			.find(|l| l.message.is(me, of, round))
			.map(|l| Duration::from_millis(l.delay_ms))
	}

	/// How long after `round`'s commit deadline `me` commits (`None`: as soon as it can).
	pub fn commit_lateness(&self, me: &PeerId, round: RoundIndex) -> Option<Duration> {
		past_deadline(&self.late_commits, me, round)
	}

	/// Until how long after `round`'s commit deadline `me`'s loop, once it committed,
	/// handles no network event (`None`: it does not stall).
	pub fn loop_stall(&self, me: &PeerId, round: RoundIndex) -> Option<Duration> {
		past_deadline(&self.stalled_loops, me, round)
	}
}

fn past_deadline(entries: &[PastDeadline], me: &PeerId, round: RoundIndex) -> Option<Duration> {
	entries
		.iter()
		.find(|l| &l.peer == me && l.round == round)
		.map(|l| Duration::from_millis(l.after_deadline_ms))
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn rules_apply_by_target_round_and_order() {
		let (a, b, c) = (PeerId::random(), PeerId::random(), PeerId::random());
		let text = format!(
			r#"
			[default]
			latency_ms = 50
			bandwidth_mbit = 50
			loss = 0.01

			[[link]]
			peer = "{a}"
			latency_ms = 150
			bandwidth_mbit = 10

			[[link]]
			between = ["{b}", "{c}"]
			from_round = 5
			until_round = 8
			partitioned = true

			[[disconnect]]
			peer = "{c}"
			at_round = 3

			[[lost_commitment]]
			of = "{a}"
			at = "{b}"
			round = 2

			[[late_attestation]]
			of = "{c}"
			at = "{a}"
			round = 1
			delay_ms = 2500

			[[late_commit]]
			peer = "{b}"
			round = 3
			after_deadline_ms = 1500

			[[stalled_loop]]
			peer = "{c}"
			round = 2
			after_deadline_ms = 2500
			"#
		);
		let s: Scenario = text.parse().unwrap();
		assert_eq!(s.link(&b, &c, 0).latency_ms, 50.0);
		assert_eq!(s.link(&b, &a, 0).latency_ms, 150.0);
		assert_eq!(s.link(&a, &c, 9).bandwidth_mbit, Some(10.0));
		assert!(!s.link(&c, &b, 4).partitioned);
		assert!(s.link(&c, &b, 5).partitioned && s.link(&b, &c, 7).partitioned);
		assert!(!s.link(&b, &c, 8).partitioned);
		assert!(!s.link(&a, &c, 6).partitioned);
		assert_eq!(s.disconnects_at(&b, 3).map(|d| d.peer).collect::<Vec<_>>(), vec![c]);
		assert!(s.disconnects_self(&c, 3) && !s.disconnects_self(&c, 4));
		assert!(s.loses_commitment(&b, &a, 2));
		assert!(!s.loses_commitment(&a, &b, 2) && !s.loses_commitment(&b, &a, 3));
		assert!(!s.loses_commitment(&c, &a, 2));
		assert_eq!(s.attestation_delay(&a, &c, 1), Some(Duration::from_millis(2500)));
		assert_eq!(s.attestation_delay(&c, &a, 1), None);
		assert_eq!(s.attestation_delay(&a, &c, 2), None);
		assert_eq!(s.commit_lateness(&b, 3), Some(Duration::from_millis(1500)));
		assert_eq!(s.commit_lateness(&b, 2), None);
		assert_eq!(s.commit_lateness(&a, 3), None);
		assert_eq!(s.loop_stall(&c, 2), Some(Duration::from_millis(2500)));
		assert_eq!(s.loop_stall(&c, 3), None);
		assert_eq!(s.loop_stall(&b, 3), None);
	}

	#[test]
	fn bad_scenarios_say_what_is_wrong() {
		let err = |t: &str| t.parse::<Scenario>().unwrap_err().to_string();
		assert!(err("[default]\nlatency = 5").contains("unknown field"));
		assert!(err("[default]\nloss = 1.5").contains("loss"));
		assert!(err("[[link]]\npeer = \"nope\"").contains("bad peer id"));
		assert!(err("[[link]]\nlatency_ms = 1").contains("exactly one of"));
		let p = PeerId::random();
		let e = err(&format!("[[link]]\npeer = \"{p}\"\nfrom_round = 3\nuntil_round = 3"));
		assert!(e.contains("until_round"), "{e}");
		assert!(err("[[link]]\npeer = \"*\"\nbandwidth_mbit = -1").contains("bandwidth"));
		assert!(err("uplink_mbit = 0").contains("uplink_mbit"));
		let e = err("[[late_attestation]]\nof = \"x\"\nat = \"y\"\nround = 1\ndelay_ms = 5");
		assert!(e.contains("late_attestation 1") && e.contains("bad peer id"), "{e}");
		let e = err(&format!("[[lost_commitment]]\nof = \"{p}\"\nat = \"x\"\nround = 1"));
		assert!(e.contains("lost_commitment 1") && e.contains("bad peer id"), "{e}");
		assert!(err(&format!("[[lost_commitment]]\nof = \"{p}\"\nround = 1")).contains("at"));
		let e = err("[[late_commit]]\npeer = \"x\"\nround = 1\nafter_deadline_ms = 5");
		assert!(e.contains("late_commit 1") && e.contains("bad peer id"), "{e}");
		let e = err(&format!("[[late_commit]]\npeer = \"{p}\"\nround = 1"));
		assert!(e.contains("after_deadline_ms"), "{e}");
		let good = format!("[[disconnect]]\npeer = \"{p}\"\nat_round = 1\n");
		let e = err(&format!("{good}[[disconnect]]\npeer = \"x\"\nat_round = 2"));
		assert!(e.contains("disconnect 2") && e.contains("bad peer id"), "{e}");
		assert_eq!("uplink_mbit = 20".parse::<Scenario>().unwrap().uplink_mbit, Some(20.0));
	}
}
