//! `b3batch bench` with tiny counts: the table, JSON (parsed back, every
//! field), CSV, the SVG plot, forced backends, and the abort on a wrong
//! digest.

mod common;

use std::process::{Command, Output};

use serde_json::Value;

fn bench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_b3batch"))
        .arg("bench")
        .args(["--count", "64", "--reps", "2", "--warmup", "0"])
        .args(args)
        .output()
        .expect("b3batch runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn table_json_csv_and_plot_hold_every_figure() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("bench.json");
    let csv = dir.path().join("bench.csv");
    let svg = dir.path().join("bench.svg");
    let out = bench(&[
        "--sizes",
        "64,1024,mixed",
        "--threads",
        "1,2",
        "--json",
        json.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
        "--plot",
        svg.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let table = text(&out.stdout);

    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let machine = &report["machine"];
    assert!(machine["cpu_model"]
        .as_str()
        .is_some_and(|model| !model.is_empty()));
    assert!(machine["cores"].as_u64().unwrap() >= 1);
    assert!(machine["lanes"].as_u64().unwrap() >= 1);
    assert!(machine["cpu_backend"].is_string());
    assert!(machine.get("adapter").is_some() && machine.get("adapter_type").is_some());
    assert_eq!(report["settings"]["count_per_case"], 64);
    assert_eq!(report["settings"]["reps"], 2);
    assert!(report["ceiling_gb_per_sec"].as_f64().unwrap() > 0.0);
    let cases = report["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 3);
    let mut contestants: Vec<String> = Vec::new();
    for (case, size) in cases.iter().zip(["64", "1024", "mixed 1..=1024"]) {
        assert_eq!(case["size"], size);
        assert_eq!(case["blobs"], 64);
        assert!(case["bytes"].as_u64().unwrap() >= 64);
        let names: Vec<String> = case["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|result| {
                for field in [
                    "median_sec",
                    "min_sec",
                    "max_sec",
                    "gb_per_sec",
                    "mblobs_per_sec",
                    "speedup",
                ] {
                    let value = result[field].as_f64().unwrap_or(-1.0);
                    assert!(value.is_finite() && value > 0.0, "{field} in {result}");
                }
                assert!(result["min_sec"].as_f64() <= result["median_sec"].as_f64());
                assert!(result["median_sec"].as_f64() <= result["max_sec"].as_f64());
                result["contestant"].as_str().unwrap().to_owned()
            })
            .collect();
        for expected in ["cpu 1t", "cpu 2t", "auto", "blake3 loop 1t"] {
            assert!(
                names.iter().any(|name| name == expected),
                "{expected} in {names:?}"
            );
        }
        let loop_speedup =
            &case["results"][names.iter().position(|n| n == "blake3 loop 1t").unwrap()]["speedup"];
        assert_eq!(loop_speedup.as_f64(), Some(1.0));
        if common::gpu_engine(None).is_some() {
            assert!(names.iter().any(|name| name == "gpu"), "{names:?}");
        }
        // Every contestant is a column of the table.
        for name in &names {
            assert!(
                table.lines().nth(2).unwrap().contains(name.as_str()),
                "{name}: {table}"
            );
        }
        contestants = names;
    }
    for size in ["64", "1024", "mixed 1..=1024"] {
        assert!(
            table.lines().any(|line| line.starts_with(size)),
            "{size}: {table}"
        );
    }

    let csv = std::fs::read_to_string(&csv).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    for field in [
        "size",
        "contestant",
        "median_sec",
        "gb_per_sec",
        "mblobs_per_sec",
        "speedup",
        "cpu_model",
        "adapter",
    ] {
        assert!(header.contains(&field), "{field}");
    }
    assert_eq!(lines.count(), 3 * contestants.len());

    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(svg.trim_start().starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert_eq!(svg.matches("<svg").count(), 1);
    assert_eq!(svg.matches("<text").count(), svg.matches("</text>").count());
    // One line per contestant, each named in the legend.
    assert_eq!(
        svg.matches("stroke-width=\"2\"").count(),
        contestants.len(),
        "{svg}"
    );
    for name in &contestants {
        assert!(
            svg.contains(&format!("{name}\n")) || svg.contains(&format!(">{name}<")),
            "{name}"
        );
    }
}

#[test]
fn forced_backends_choose_the_columns() {
    let header = table_header(&["--backend", "cpu", "--sizes", "256", "--threads", "1"]);
    assert!(
        header.contains("cpu 1t") && header.contains("blake3 loop 1t"),
        "{header}"
    );
    assert!(
        !header.contains("gpu") && !header.contains("auto"),
        "{header}"
    );
    if common::gpu_engine(None).is_none() {
        return;
    }
    let header = table_header(&["--backend", "gpu", "--sizes", "256"]);
    assert!(
        header.contains("gpu") && header.contains("blake3 loop 1t"),
        "{header}"
    );
    assert!(
        !header.contains("cpu 1t") && !header.contains("auto"),
        "{header}"
    );
    // With --stages, where the GPU's time went: slabs packed and copied in,
    // a call over GPU buffers checked, recorded and waited for.
    let header = table_header(&["--backend", "gpu", "--sizes", "256", "--stages"]);
    for stage in ["gpu pack", "gpu resident host", "gpu resident wait"] {
        assert!(header.contains(stage), "{stage}: {header}");
    }
    // Timed on the GPU, like the shader's own column.
    assert_eq!(
        header.contains("gpu resident check"),
        header.contains("gpu resident kernel"),
        "{header}"
    );
    // With Auto, each split's GPU side too: which side set its pace.
    let header = table_header(&["--sizes", "256", "--threads", "2", "--stages"]);
    assert!(header.contains("split gpu side"), "{header}");
    assert_eq!(
        header.contains("split pinned gpu side"),
        header.contains("split pinned"),
        "{header}"
    );
}

/// Runs `bench` with `args`, checks it succeeded, and returns the table's
/// header line.
fn table_header(args: &[&str]) -> String {
    let out = bench(args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout).lines().nth(2).unwrap().to_owned()
}

#[test]
fn a_wrong_digest_aborts_loudly() {
    let out = bench(&[
        "--sizes",
        "64",
        "--inject-fault",
        "--backend",
        "cpu",
        "--threads",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("DIGEST MISMATCH"),
        "{}",
        text(&out.stderr)
    );
    assert!(text(&out.stdout).is_empty(), "no table from a wrong run");
}

#[test]
fn bad_sizes_get_usage() {
    let out = bench(&["--sizes", "0"]);
    assert_eq!(out.status.code(), Some(2));
    let out = bench(&["--sizes", "huge"]);
    assert_eq!(out.status.code(), Some(2));
}
