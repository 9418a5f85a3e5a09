//! Held-out evaluation on its own thread and its own copy of the model: a round's new state
//! is evaluated beside the next round's training instead of in front of it, so evaluation
//! never shortens a training window (the round's record waits for the result instead).

use std::{
	sync::{
		mpsc::{self, Receiver, RecvTimeoutError},
		Arc,
	},
	time::{Duration, Instant},
};

use candle_core::Device;
use grid_primitives::job::{ModelSpec, RoundIndex};

use super::worker::Worker;
use crate::{
	error::Result,
	model::{Batch, Model},
	train::evaluate,
};

/// Most samples evaluated in one forward pass.
const EVAL_ROWS: usize = 250;
/// Most tokens evaluated in one forward pass of a model that reads token streams. With the
/// weights as training variables a pass kept every activation until its loss was read (250
/// samples of context 64 at width 672 held 2.9 GB at once); the evaluation model records
/// no graph now ([`Model::for_inference`]), and this bound keeps even one layer's
/// activations small.
const EVAL_TOKENS: usize = 4096;

/// Samples per held-out batch for `spec`: at most [`EVAL_ROWS`], and at most
/// [`EVAL_TOKENS`] tokens (at least one sample). The loss is the same mean whatever the
/// batching, up to the order of a float sum.
pub(super) fn eval_rows(spec: &ModelSpec) -> usize {
	match spec.context() {
		Some(context) => (EVAL_TOKENS / (context as usize).max(1)).clamp(1, EVAL_ROWS),
		None => EVAL_ROWS,
	}
}

/// A state to evaluate: the one a round's outer step gave.
struct Request {
	round: RoundIndex,
	weights: Arc<Vec<f32>>,
}

/// A round's held-out loss, or why it could not be computed.
pub(super) struct Evaluated {
	/// The round whose outer step gave the evaluated state.
	pub round: RoundIndex,
	/// Mean held-out loss.
	pub loss: Result<f64>,
	/// How long the evaluation took on its thread.
	pub took: Duration,
}

/// The evaluation thread: requests in, losses out, in order.
pub(super) struct Evaluator {
	worker: Worker<Request>,
	results: Receiver<Evaluated>,
	/// Requests sent whose result has not been taken.
	pending: usize,
}

impl Evaluator {
	/// Starts the thread with a fresh `spec` model on `device` (its weights are replaced by
	/// every request's) and the held-out `batches`.
	pub fn start(spec: ModelSpec, device: &Device, batches: Vec<Batch>) -> Result<Self> {
		let model = Model::for_inference(spec, b"grid/evaluator", device)?;
		let (outbox, results) = mpsc::channel();
		let worker = Worker::spawn("evaluation", move |inbox: Receiver<Request>| {
			crate::priority::lower_this_thread();
			for Request { round, weights } in inbox {
				let start = Instant::now();
				let loss =
					model.params().load_flat(&weights).and_then(|()| evaluate(&model, &batches));
				let done = Evaluated { round, loss, took: start.elapsed() };
				if outbox.send(done).is_err() {
					return;
				}
			}
		})?;
		Ok(Evaluator { worker, results, pending: 0 })
	}

	/// Queues the state `round`'s outer step gave.
	pub fn submit(&mut self, round: RoundIndex, weights: Arc<Vec<f32>>) {
		if self.worker.send(Request { round, weights }) {
			self.pending += 1;
		} else {
			tracing::error!("round {round}: the evaluation thread is gone; not evaluated");
		}
	}

	/// Whether results are still to come.
	pub fn is_busy(&self) -> bool {
		self.pending > 0
	}

	/// The next result, waiting for it until `until` (not at all when `until` has passed).
	pub fn next(&mut self, until: Instant) -> Option<Evaluated> {
		if self.pending == 0 {
			return None;
		}
		let wait = until.saturating_duration_since(Instant::now());
		let got = match self.results.recv_timeout(wait) {
			Ok(done) => Some(done),
			Err(RecvTimeoutError::Timeout) => None,
			Err(RecvTimeoutError::Disconnected) => {
				tracing::error!("the evaluation thread stopped; {} left unevaluated", self.pending);
				self.pending = 0;
				return None;
			}
		};
		self.pending -= usize::from(got.is_some());
		got
	}
}

#[cfg(test)]
mod tests {
	use grid_primitives::job::MlpConfig;

	use super::*;
	use crate::data::MnistDataset;

	#[test]
	fn held_out_batches_are_bounded_by_tokens_and_give_the_same_loss() {
		use grid_primitives::job::GptConfig;
		let gpt = |context| {
			ModelSpec::Gpt(GptConfig { vocab: 256, context, layers: 1, heads: 1, width: 8 })
		};
		assert_eq!(eval_rows(&gpt(64)), 64);
		assert_eq!(eval_rows(&gpt(256)), 16);
		assert_eq!(eval_rows(&gpt(8192)), 1, "one sample even when it is longer");
		assert_eq!(eval_rows(&gpt(4)), EVAL_ROWS);
		let mlp = ModelSpec::MnistMlp(MlpConfig { hidden: 8, layers: 1 });
		assert_eq!(eval_rows(&mlp), EVAL_ROWS);
		let dev = Device::Cpu;
		let model = Model::new(mlp, b"rows", &dev).unwrap();
		let data = MnistDataset::shipped().unwrap();
		let whole = evaluate(&model, &data.eval_batches(210, 210, &dev).unwrap()).unwrap();
		let small = evaluate(&model, &data.eval_batches(210, 16, &dev).unwrap()).unwrap();
		assert!((whole - small).abs() < 1e-5 * whole, "{whole} vs {small}");
	}

	#[test]
	fn states_are_evaluated_in_order_on_their_own_model() {
		let dev = Device::Cpu;
		let spec = ModelSpec::MnistMlp(MlpConfig { hidden: 8, layers: 1 });
		let batches = MnistDataset::shipped().unwrap().eval_batches(200, 100, &dev).unwrap();
		let a = Model::new(spec, b"a", &dev).unwrap();
		let b = Model::new(spec, b"b", &dev).unwrap();
		let mut evaluator = Evaluator::start(spec, &dev, batches.clone()).unwrap();
		assert!(evaluator.next(Instant::now()).is_none(), "nothing asked, nothing waited for");
		evaluator.submit(3, Arc::new(a.params().flatten().unwrap()));
		evaluator.submit(4, Arc::new(b.params().flatten().unwrap()));
		evaluator.submit(5, Arc::new(vec![0.0; 3]));
		assert!(evaluator.is_busy());
		let deadline = Instant::now() + Duration::from_secs(60);
		let first = evaluator.next(deadline).unwrap();
		let second = evaluator.next(deadline).unwrap();
		assert_eq!((first.round, second.round), (3, 4));
		assert_eq!(first.loss.unwrap(), evaluate(&a, &batches).unwrap());
		assert_eq!(second.loss.unwrap(), evaluate(&b, &batches).unwrap());
		let bad = evaluator.next(deadline).unwrap();
		assert_eq!(bad.round, 5);
		assert!(bad.loss.is_err(), "weights of the wrong size are an error, not a loss");
		assert!(!evaluator.is_busy());
	}
}
