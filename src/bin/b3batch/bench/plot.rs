//! `--plot FILE.svg`: throughput against blob size, one line per
//! contestant, drawn with plotters' SVG backend (no fonts or system
//! libraries needed).

use std::path::Path;

use plotters::prelude::*;

use super::report::Report;

pub fn write_svg(report: &Report, path: &Path) -> Result<(), String> {
    let failed = |error: &dyn std::fmt::Display| format!("plot {}: {error}", path.display());
    let Some(first) = report.cases.first() else {
        return Err(failed(&"no cases to plot"));
    };
    let top = report
        .cases
        .iter()
        .flat_map(|case| case.results.iter().map(|result| result.gb_per_sec))
        .fold(report.ceiling_gb_per_sec, f64::max)
        * 1.1;
    let labels: Vec<String> = report.cases.iter().map(|case| case.size.clone()).collect();
    let root = SVGBackend::new(path, (960, 540)).into_drawing_area();
    root.fill(&WHITE).map_err(|error| failed(&error))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("blake3-batch throughput ({})", report.machine.cpu_model),
            ("sans-serif", 20),
        )
        .margin(20)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(-0.5f64..(labels.len() as f64 - 0.5), 0f64..top)
        .map_err(|error| failed(&error))?;
    chart
        .configure_mesh()
        .x_desc("blob size (bytes)")
        .y_desc("GB/s")
        .x_labels(labels.len())
        .x_label_formatter(&|x| {
            let index = x.round();
            if (x - index).abs() < 1e-6 && index >= 0.0 {
                labels.get(index as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .draw()
        .map_err(|error| failed(&error))?;
    for (series, contestant) in first.results.iter().map(|r| &r.contestant).enumerate() {
        let color = Palette99::pick(series).to_rgba();
        let points: Vec<(f64, f64)> = report
            .cases
            .iter()
            .enumerate()
            .filter_map(|(index, case)| {
                case.results
                    .iter()
                    .find(|result| &result.contestant == contestant)
                    .map(|result| (index as f64, result.gb_per_sec))
            })
            .collect();
        chart
            .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))
            .map_err(|error| failed(&error))?
            .label(contestant.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        chart
            .draw_series(
                points
                    .iter()
                    .map(|&point| Circle::new(point, 3, color.filled())),
            )
            .map_err(|error| failed(&error))?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(|error| failed(&error))?;
    root.present().map_err(|error| failed(&error))
}
