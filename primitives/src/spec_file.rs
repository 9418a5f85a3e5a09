//! How job specs are read from files (TOML): the `serde` forms of the types in [`crate::job`]
//! that are not plain derives. Fractions are written as decimals and become [`Nanos`] by
//! [`Nanos::from_f64`]; amounts are written in GRID; a dataset is a shipped one's name or
//! `{ uri = "…", content_hash = "0x…" }`.

use alloc::{format, string::String};
use core::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};

use crate::{
	currency::UNIT,
	datasets::{parse_hex32, ShippedDataset, SHIPPED},
	job::{
		Compression, DatasetRef, ExchangeWindow, InnerOptimizer, Nanos, OuterAnneal, TrainingParams,
	},
	provider::BoundedBytes,
};

impl<'de> Deserialize<'de> for Nanos {
	fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
		let x = f64::deserialize(deserializer)?;
		Nanos::from_f64(x)
			.ok_or_else(|| de::Error::custom(format!("{x} is outside [0, {}]", Nanos::MAX_F64)))
	}
}

/// GRID as the chain's smallest units; `None` for what no balance can be.
pub fn grid_units(grid: f64) -> Option<u128> {
	let units = grid * UNIT as f64;
	(grid.is_finite() && grid >= 0.0 && units < u128::MAX as f64).then_some(units.round() as u128)
}

/// Reads an amount written in GRID (`10`, `0.5`) as units of any balance type.
pub fn grid<'de, D: Deserializer<'de>, B: TryFrom<u128>>(deserializer: D) -> Result<B, D::Error> {
	let x = f64::deserialize(deserializer)?;
	grid_units(x)
		.and_then(|units| B::try_from(units).ok())
		.ok_or_else(|| de::Error::custom(format!("{x} GRID is not a usable amount")))
}

pub(crate) fn byte_vocab() -> u32 {
	256
}

fn error_decay() -> Nanos {
	crate::job::DEFAULT_ERROR_DECAY
}

/// [`TrainingParams`] as a job file writes it. The outer step, when left out, is the
/// compression's ([`Compression::default_outer_step`]), which no per-field default can
/// see; each of its two halves may be given alone.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrainingFile<BlockNumber> {
	#[serde(default)]
	round_blocks: BlockNumber,
	batch_size: u32,
	inner: InnerOptimizer,
	outer_lr: Option<Nanos>,
	outer_momentum: Option<Nanos>,
	#[serde(default = "error_decay")]
	error_decay: Nanos,
	#[serde(default)]
	dense_rounds: u32,
	#[serde(default)]
	outer_anneal: Option<OuterAnneal>,
	#[serde(default)]
	overlap_steps: u32,
	#[serde(default)]
	max_steps: Option<u32>,
	#[serde(default)]
	exchange: ExchangeWindow,
	compression: Compression,
}

impl<BlockNumber> From<TrainingFile<BlockNumber>> for TrainingParams<BlockNumber> {
	fn from(f: TrainingFile<BlockNumber>) -> Self {
		let outer = f.compression.default_outer_step();
		TrainingParams {
			round_blocks: f.round_blocks,
			batch_size: f.batch_size,
			inner: f.inner,
			outer_lr: f.outer_lr.unwrap_or(outer.lr),
			outer_momentum: f.outer_momentum.unwrap_or(outer.momentum),
			error_decay: f.error_decay,
			dense_rounds: f.dense_rounds,
			outer_anneal: f.outer_anneal,
			overlap_steps: f.overlap_steps,
			max_steps: f.max_steps,
			exchange: f.exchange,
			compression: f.compression,
		}
	}
}

impl<'de> Deserialize<'de> for DatasetRef {
	fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
		deserializer.deserialize_any(DatasetVisitor)
	}
}

struct DatasetVisitor;

impl<'de> Visitor<'de> for DatasetVisitor {
	type Value = DatasetRef;

	fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
		f.write_str("a shipped dataset's name or { uri = \"…\", content_hash = \"0x…\" }")
	}

	fn visit_str<E: de::Error>(self, name: &str) -> Result<DatasetRef, E> {
		let shipped = ShippedDataset::named(name).ok_or_else(|| {
			let names: alloc::vec::Vec<&str> = SHIPPED.iter().map(|d| d.name).collect();
			E::custom(format!(
				"no shipped dataset is called {name:?} (shipped: {})",
				names.join(", ")
			))
		})?;
		Ok(shipped.reference())
	}

	fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<DatasetRef, M::Error> {
		let (mut uri, mut hash) = (None::<String>, None::<String>);
		while let Some(key) = map.next_key::<String>()? {
			match key.as_str() {
				"uri" => uri = Some(map.next_value()?),
				"content_hash" => hash = Some(map.next_value()?),
				other => return Err(de::Error::unknown_field(other, &["uri", "content_hash"])),
			}
		}
		let uri = uri.ok_or_else(|| de::Error::missing_field("uri"))?;
		let hash = hash.ok_or_else(|| de::Error::missing_field("content_hash"))?;
		let content_hash = parse_hex32(&hash)
			.ok_or_else(|| de::Error::custom(format!("{hash:?} is not a 32-byte hex hash")))?;
		let uri = BoundedBytes::try_from(uri.into_bytes())
			.map_err(|_| de::Error::custom("the dataset URI is over 256 bytes"))?;
		Ok(DatasetRef { content_hash: content_hash.into(), uri })
	}
}

#[cfg(test)]
mod tests {
	use super::*;
	use crate::{
		datasets::{MNIST, SHAKESPEARE},
		job::{GptConfig, JobSpec, MlpConfig, ModelSpec},
	};

	const JOB: &str = r#"
		dataset = "shakespeare"
		model = { kind = "gpt", context = 64, layers = 2, heads = 4, width = 64 }
		rounds = 5
		reward_per_round = 10.5
		min_providers = 2
		max_providers = 4
		min_provider_stake = 100

		[training]
		round_blocks = 10
		batch_size = 8
		inner = { optimizer = "adamw", lr = 0.001 }
		outer_momentum = 0.5
		compression = { scheme = "int8", chunk = 256 }
	"#;

	fn parse(text: &str) -> Result<JobSpec<u128, u32>, String> {
		toml::from_str(text).map_err(|e| e.to_string())
	}

	#[test]
	fn a_job_file_is_a_job_spec() {
		let spec = parse(JOB).unwrap();
		assert_eq!(
			spec.model,
			ModelSpec::Gpt(GptConfig { vocab: 256, context: 64, layers: 2, heads: 4, width: 64 })
		);
		assert_eq!(spec.dataset, SHAKESPEARE.reference());
		assert_eq!(
			spec.training,
			TrainingParams {
				round_blocks: 10,
				batch_size: 8,
				inner: InnerOptimizer::AdamW {
					lr: Nanos(1_000_000),
					weight_decay: Nanos(0),
					warmup_steps: 0
				},
				outer_lr: Nanos(700_000_000),
				outer_momentum: Nanos(500_000_000),
				error_decay: Nanos(900_000_000),
				dense_rounds: 0,
				outer_anneal: None,
				overlap_steps: 0,
				max_steps: None,
				exchange: Default::default(),
				compression: Compression::Int8 { chunk: 256 },
			}
		);
		assert_eq!(spec.reward_per_round, 10 * UNIT + UNIT / 2);
		assert_eq!(spec.min_provider_stake, 100 * UNIT);
		assert_eq!(spec.challenge_window, 0);

		let explicit = JOB
			.replace("\"shakespeare\"", "{ uri = \"grid:mnist\", content_hash = \"0xce7dc16f6a6e336d343c422bbe8ae8ae7f89620b578b6957b2fae20d8c1d1bb9\" }")
			.replace("{ kind = \"gpt\", context = 64, layers = 2, heads = 4, width = 64 }", "{ kind = \"mlp\", hidden = 64, layers = 1 }")
			.replace("{ scheme = \"int8\", chunk = 256 }", "{ scheme = \"topk\", chunk = 64, k = 4, value_bits = 2 }")
			.replace("optimizer = \"adamw\"", "optimizer = \"sgd\"");
		let spec = parse(&explicit).unwrap();
		assert_eq!(spec.dataset, MNIST.reference());
		assert_eq!(spec.model, ModelSpec::MnistMlp(MlpConfig { hidden: 64, layers: 1 }));
		assert_eq!(spec.training.compression, Compression::TopK { chunk: 64, k: 4, value_bits: 2 });
		assert_eq!(spec.training.inner, InnerOptimizer::Sgd { lr: Nanos(1_000_000) });
		let tiles =
			JOB.replace("{ scheme = \"int8\", chunk = 256 }", "{ scheme = \"tiles\", k = 64 }");
		assert_eq!(parse(&tiles).unwrap().training.compression, Compression::Tiles { k: 64 });
		let exchange = JOB.replace(
			"batch_size = 8",
			"batch_size = 8\nexchange = { grace_ms = 3000, fetch_ms = 20000, fan_in = 16 }",
		);
		assert_eq!(
			parse(&exchange).unwrap().training.exchange,
			crate::job::ExchangeWindow { grace_ms: 3_000, fetch_ms: 20_000, fan_in: Some(16) }
		);
	}

	/// A job that names no outer step gets its compression's: what `bench/algorithms.sh`
	/// measured best, so the daemon runs what met the bytes target; a half given is kept.
	#[test]
	fn the_outer_step_defaults_by_the_compression() {
		let topk = "{ scheme = \"topk\", chunk = 256, k = 32, value_bits = 1 }";
		let cases = [
			("{ scheme = \"int8\", chunk = 256 }", "", (700_000_000, 900_000_000)),
			("{ scheme = \"none\" }", "", (700_000_000, 900_000_000)),
			(topk, "", (3_000_000_000, 0)),
			("{ scheme = \"tiles\", k = 64 }", "", (3_000_000_000, 0)),
			(topk, "outer_momentum = 0.5\n", (3_000_000_000, 500_000_000)),
			(topk, "outer_lr = 1.5\n", (1_500_000_000, 0)),
			("{ scheme = \"int8\", chunk = 256 }", "outer_lr = 2\n", (2_000_000_000, 900_000_000)),
		];
		for (compression, given, (lr, momentum)) in cases {
			let text = JOB
				.replace("outer_momentum = 0.5\n", given)
				.replace("{ scheme = \"int8\", chunk = 256 }", compression);
			let training = parse(&text).unwrap().training;
			assert_eq!(
				(training.outer_lr, training.outer_momentum),
				(Nanos(lr), Nanos(momentum)),
				"{compression} with {given:?}"
			);
		}
	}

	#[test]
	fn bad_job_files_say_what_is_wrong() {
		let cases = [
			("lr = 0.001", "lr = -1.0", "-1 is outside [0, 4.294967295]"),
			("outer_momentum = 0.5", "outer_momentum = 5", "5 is outside"),
			(
				"reward_per_round = 10.5",
				"reward_per_round = -3.0",
				"-3 GRID is not a usable amount",
			),
			("\"shakespeare\"", "\"imagenet\"", "no shipped dataset is called \"imagenet\""),
			(
				"\"shakespeare\"",
				"{ uri = \"x\", content_hash = \"0x12\" }",
				"not a 32-byte hex hash",
			),
			("\"shakespeare\"", "{ uri = \"x\" }", "missing field `content_hash`"),
			("kind = \"gpt\"", "kind = \"rnn\"", "unknown variant `rnn`"),
			("heads = 4", "heads = 4, depth = 2", "unknown field `depth`"),
			("\"adamw\"", "\"lion\"", "unknown variant `lion`"),
			("rounds = 5", "rounds = 5\nfoo = 1", "unknown field `foo`"),
			("batch_size = 8", "batch_size = 8\nouter_rate = 1", "unknown field `outer_rate`"),
			("batch_size = 8\n", "", "missing field `batch_size`"),
			("min_providers = 2\n", "", "missing field `min_providers`"),
			(
				"batch_size = 8",
				"batch_size = 8\nexchange = { grace_ms = 3000 }",
				"missing field `fetch_ms`",
			),
			(
				"batch_size = 8",
				"batch_size = 8\nexchange = { grace_ms = -1, fetch_ms = 5 }",
				"invalid value",
			),
		];
		for (from, to, expected) in cases {
			let text = JOB.replace(from, to);
			assert_ne!(text, JOB, "{from} is in the file");
			let err = parse(&text).unwrap_err();
			assert!(err.contains(expected), "{expected}: {err}");
		}
	}

	#[test]
	fn fixed_point_and_grid_amounts_round_and_refuse_what_they_cannot_hold() {
		assert_eq!(Nanos::from_f64(0.7), Some(Nanos(700_000_000)));
		assert_eq!(Nanos::from_f64(1e-9), Some(Nanos(1)));
		assert_eq!(Nanos::from_f64(4.294967295), Some(Nanos(u32::MAX)));
		for x in [4.3, -0.1, f64::NAN, f64::INFINITY] {
			assert_eq!(Nanos::from_f64(x), None, "{x}");
		}
		assert_eq!(grid_units(0.5), Some(UNIT / 2));
		assert_eq!(grid_units(-1.0), None);
		assert_eq!(grid_units(f64::INFINITY), None);
		assert_eq!(grid_units(1e30), None);
	}
}
