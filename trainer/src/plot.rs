//! Line plots and timelines as standalone SVG, for the benchmark reports (no plotting
//! dependency).

use std::fmt::Write;

/// One named line.
pub struct Series {
	/// Legend text.
	pub name: String,
	/// Points in data coordinates.
	pub points: Vec<(f64, f64)>,
}

/// Axis labels and scale.
pub struct Axes<'a> {
	/// Label under the x axis.
	pub x_label: &'a str,
	/// Label beside the y axis.
	pub y_label: &'a str,
	/// Logarithmic x axis (decades).
	pub log_x: bool,
}

const COLOURS: [&str; 6] = ["#000000", "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd"];

/// An SVG line plot of `series`.
pub fn line_plot(series: &[Series], axes: &Axes) -> String {
	let (w, h, left, bottom, top, right) = (760.0, 460.0, 70.0, 50.0, 20.0, 250.0);
	let tx = |x: f64| if axes.log_x { x.max(1.0).log10() } else { x };
	let points: Vec<(f64, f64)> = series.iter().flat_map(|s| s.points.iter().copied()).collect();
	let (mut xmin, mut xmax) = points
		.iter()
		.map(|p| tx(p.0))
		.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| (a.min(x), b.max(x)));
	if axes.log_x {
		(xmin, xmax) = (xmin.floor(), xmax.ceil());
	}
	let ymin = points.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
	let ymax = points.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max);
	let (ymin, ymax) = (ymin - 0.05 * (ymax - ymin), ymax + 0.05 * (ymax - ymin));
	let (pw, ph) = (w - left - right, h - top - bottom);
	let x = |v: f64| left + (tx(v) - xmin) / (xmax - xmin).max(1e-9) * pw;
	let y = |v: f64| top + (ymax - v) / (ymax - ymin).max(1e-9) * ph;
	let mut out = format!(
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
	);
	let _ = writeln!(out, "<rect x=\"{left}\" y=\"{top}\" width=\"{pw}\" height=\"{ph}\" fill=\"none\" stroke=\"#888\"/>");
	// Log axes get a tick per decade (their bounds are whole decades), linear ones five.
	let x_ticks: Vec<(f64, String)> = if axes.log_x {
		((xmin as i32)..=(xmax as i32))
			.map(|e| {
				(left + (f64::from(e) - xmin) / (xmax - xmin).max(1e-9) * pw, format!("1e{e}"))
			})
			.collect()
	} else {
		(0..=5)
			.map(|i| {
				(
					left + pw * f64::from(i) / 5.0,
					format!("{:.0}", xmin + (xmax - xmin) * f64::from(i) / 5.0),
				)
			})
			.collect()
	};
	for (px, label) in x_ticks {
		let _ = writeln!(out, "<line x1=\"{px:.1}\" y1=\"{top}\" x2=\"{px:.1}\" y2=\"{}\" stroke=\"#ddd\"/><text x=\"{px:.1}\" y=\"{}\" text-anchor=\"middle\">{label}</text>", top + ph, top + ph + 16.0);
	}
	for i in 0..=5 {
		let v = ymin + (ymax - ymin) * f64::from(i) / 5.0;
		let py = y(v);
		let _ = writeln!(out, "<line x1=\"{left}\" y1=\"{py:.1}\" x2=\"{}\" y2=\"{py:.1}\" stroke=\"#eee\"/><text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{v:.2}</text>", left + pw, left - 6.0, py + 4.0);
	}
	let _ = writeln!(
		out,
		"<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
		left + pw / 2.0,
		h - 10.0,
		axes.x_label
	);
	let _ = writeln!(
		out,
		"<text x=\"16\" y=\"{}\" transform=\"rotate(-90 16 {})\" text-anchor=\"middle\">{}</text>",
		top + ph / 2.0,
		top + ph / 2.0,
		axes.y_label
	);
	for (i, s) in series.iter().enumerate() {
		let c = COLOURS[i % COLOURS.len()];
		let path: Vec<String> =
			s.points.iter().map(|&(a, b)| format!("{:.1},{:.1}", x(a), y(b))).collect();
		let _ = writeln!(
			out,
			"<polyline fill=\"none\" stroke=\"{c}\" stroke-width=\"2\" points=\"{}\"/>",
			path.join(" ")
		);
		let ly = top + 14.0 + 18.0 * i as f64;
		let _ = writeln!(out, "<line x1=\"{}\" y1=\"{ly}\" x2=\"{}\" y2=\"{ly}\" stroke=\"{c}\" stroke-width=\"2\"/><text x=\"{}\" y=\"{}\">{}</text>", left + pw + 10.0, left + pw + 30.0, left + pw + 36.0, ly + 4.0, s.name);
	}
	out.push_str("</svg>\n");
	out
}

/// A span of time on a timeline.
#[derive(Clone, Copy, Debug)]
pub struct Span {
	/// Start, in the x axis' unit.
	pub start: f64,
	/// End.
	pub end: f64,
	/// Index into the plot's kinds (its colour and legend).
	pub kind: usize,
}

/// One named row of a timeline.
pub struct Lane {
	/// Text left of the row.
	pub name: String,
	/// Its spans.
	pub spans: Vec<Span>,
}

/// An SVG timeline: one row per lane, each span a bar coloured by its kind (named in the
/// legend by `kinds`).
pub fn timeline_plot(lanes: &[Lane], kinds: &[&str], x_label: &str) -> String {
	let (left, right, top, row, bottom) = (150.0, 200.0, 20.0, 26.0, 50.0);
	let pw = 760.0 - left - right;
	let h = top + row * lanes.len().max(1) as f64 + bottom;
	let spans = lanes.iter().flat_map(|l| l.spans.iter());
	let xmin = spans.clone().map(|s| s.start).fold(f64::INFINITY, f64::min).min(0.0);
	let xmax = spans.map(|s| s.end).fold(f64::NEG_INFINITY, f64::max).max(xmin + 1e-9);
	let x = |v: f64| left + (v - xmin) / (xmax - xmin) * pw;
	let mut out = format!(
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"760\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
	);
	let bottom_y = top + row * lanes.len() as f64;
	for i in 0..=5 {
		let v = xmin + (xmax - xmin) * f64::from(i) / 5.0;
		let px = x(v);
		let _ = writeln!(out, "<line x1=\"{px:.1}\" y1=\"{top}\" x2=\"{px:.1}\" y2=\"{bottom_y}\" stroke=\"#ddd\"/><text x=\"{px:.1}\" y=\"{}\" text-anchor=\"middle\">{v:.0}</text>", bottom_y + 16.0);
	}
	let _ = writeln!(
		out,
		"<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{x_label}</text>",
		left + pw / 2.0,
		h - 10.0
	);
	for (i, lane) in lanes.iter().enumerate() {
		let y = top + row * i as f64;
		let _ = writeln!(
			out,
			"<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
			left - 6.0,
			y + row / 2.0 + 4.0,
			lane.name
		);
		for s in &lane.spans {
			let c = COLOURS[(s.kind + 1) % COLOURS.len()];
			let (x0, x1) = (x(s.start), x(s.end.max(s.start)));
			let _ = writeln!(
				out,
				"<rect x=\"{x0:.2}\" y=\"{:.1}\" width=\"{:.2}\" height=\"{:.1}\" fill=\"{c}\"/>",
				y + 3.0,
				(x1 - x0).max(0.5),
				row - 6.0
			);
		}
	}
	for (i, kind) in kinds.iter().enumerate() {
		let c = COLOURS[(i + 1) % COLOURS.len()];
		let ly = top + 14.0 + 18.0 * i as f64;
		let lx = left + pw + 10.0;
		let _ = writeln!(out, "<rect x=\"{lx}\" y=\"{}\" width=\"20\" height=\"10\" fill=\"{c}\"/><text x=\"{}\" y=\"{}\">{kind}</text>", ly - 5.0, lx + 26.0, ly + 4.0);
	}
	out.push_str("</svg>\n");
	out
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn timelines_draw_every_span_in_its_lane() {
		let lanes = [
			Lane {
				name: "t0".into(),
				spans: vec![
					Span { start: 0.0, end: 5.0, kind: 0 },
					Span { start: 5.0, end: 6.0, kind: 1 },
				],
			},
			Lane { name: "t1".into(), spans: vec![Span { start: 1.0, end: 4.0, kind: 0 }] },
		];
		let svg = timeline_plot(&lanes, &["compute", "exchange"], "s");
		// Two legend swatches, the background and three spans.
		assert_eq!(svg.matches("<rect").count(), 1 + 3 + 2);
		assert!(svg.contains(">t0</text>") && svg.contains(">exchange</text>"));
		assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
	}

	#[test]
	fn plots_every_series_with_its_legend() {
		let series = [
			Series { name: "a".into(), points: vec![(1.0, 2.0), (10.0, 1.0)] },
			Series { name: "b".into(), points: vec![(1.0, 3.0), (100.0, 0.5)] },
		];
		let svg = line_plot(&series, &Axes { x_label: "x", y_label: "y", log_x: true });
		assert_eq!(svg.matches("<polyline").count(), 2);
		assert!(svg.contains(">a</text>") && svg.contains(">b</text>"));
		assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
	}
}
