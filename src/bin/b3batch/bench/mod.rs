//! `b3batch bench`: the GPU against 1..N CPU threads, `Auto`, and the
//! `blake3::hash` loop on one and on all cores, on generated blobs of each
//! size; a table on stdout, and JSON, CSV and an SVG plot on request.

mod cases;
mod measure;
mod plot;
mod report;

use std::io::{self, Write};
use std::path::PathBuf;

use blake3_batch::{cpu_model, Backend, Choice, Engine};
use clap::Args;

use self::cases::{Case, SizeSpec};
use self::measure::{
    ceiling_gb_per_sec, cpu_column, measure, measure_bus, measure_resident, pinned, widest_cpu,
    Contestant, Measurement, Stages,
};
use self::report::{AutoPlan, CaseReport, Machine, Report, Settings};
use crate::options::{BackendArg, GlobalArgs};

/// Options of `b3batch bench` (the global `--threads 1,2,4` lists the CPU
/// thread counts to compare, default 1, 2, 4, … up to every core).
#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Blob sizes in bytes; `mixed` means lengths uniform in 1..=1024.
    #[arg(long, value_delimiter = ',', default_value = "64,256,1024,4096,mixed")]
    sizes: Vec<SizeSpec>,
    /// Input bytes per case (rounded up to whole blobs).
    #[arg(long, default_value_t = 16 << 20, conflicts_with = "count")]
    bytes: usize,
    /// Blobs per case, instead of --bytes.
    #[arg(long)]
    count: Option<usize>,
    /// Untimed runs before the timed ones.
    #[arg(long, default_value_t = 1)]
    warmup: usize,
    /// Timed runs per cell; the median is reported, the spread shown.
    #[arg(long, default_value_t = 5)]
    reps: usize,
    /// Also write every figure and the machine as JSON here.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Also write every figure and the machine as CSV here.
    #[arg(long, value_name = "FILE")]
    csv: Option<PathBuf>,
    /// Also draw throughput against blob size as SVG here.
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<PathBuf>,
    /// Also show the GPU engine's own stages as rates of the case's bytes:
    /// packing on the CPU (`gpu pack`) and the copy into device memory
    /// timed on the GPU (`gpu copy in`), summed over slabs; and of one call
    /// over GPU buffers, the offsets' check on the GPU (`gpu resident
    /// check`), the host's work before submitting (`gpu resident host`) and
    /// its wait (`gpu resident wait`).
    #[arg(long)]
    stages: bool,
    /// Test only: corrupt one digest so the check must abort the run.
    #[arg(long, hide = true)]
    inject_fault: bool,
}

/// Thread counts 1, 2, 4, … and every core.
fn default_threads() -> Vec<usize> {
    let cores = cores();
    let mut threads: Vec<usize> = std::iter::successors(Some(1usize), |&n| Some(n * 2))
        .take_while(|&n| n < cores)
        .collect();
    threads.push(cores);
    threads
}

/// This machine's logical cores.
fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |cores| cores.get())
}

/// The columns `--backend` asks for: `auto` compares everything, `cpu`
/// leaves out the GPU and Auto, `gpu` compares the GPU with the baselines.
fn contestants(global: &GlobalArgs) -> Result<(Vec<Contestant>, Option<Engine>), String> {
    let mut list = Vec::new();
    let threads = match global.threads_asked() {
        [] => default_threads(),
        // A 0 in a list is a column on every core, as the default's last.
        list => list
            .iter()
            .map(|&n| if n == 0 { cores() } else { n })
            .collect(),
    };
    // The GPU and Auto pack and hash on as many threads as the widest CPU
    // column, each with a pool of its own as that column has, so the forced
    // choices and Auto compare like for like.
    let most = threads.iter().copied().max().unwrap_or(1);
    let gpu = match global.backend {
        BackendArg::Cpu => None,
        BackendArg::Auto => global.builder(Backend::Gpu).threads(most).build().ok(),
        BackendArg::Gpu => Some(
            global
                .builder(Backend::Gpu)
                .threads(most)
                .build()
                .map_err(|error| error.to_string())?,
        ),
    };
    if let Some(gpu) = &gpu {
        list.push(Contestant::Engine("gpu".to_owned(), gpu.clone()));
    }
    if global.backend != BackendArg::Gpu {
        for count in threads {
            let engine = Engine::builder()
                .backend(Backend::Cpu)
                .threads(count)
                .build()
                .map_err(|error| error.to_string())?;
            list.push(Contestant::Engine(cpu_column(count), engine));
        }
    }
    if global.backend == BackendArg::Auto {
        let auto = global
            .builder(Backend::Auto)
            .threads(most)
            .build()
            .map_err(|error| error.to_string())?;
        list.push(Contestant::Engine("auto".to_owned(), auto));
    }
    list.push(Contestant::HashLoop);
    list.push(Contestant::HashLoopAllCores);
    Ok((list, gpu))
}

/// With `--backend auto` and a GPU: an engine that splits every batch of
/// the case between the GPU and the widest CPU column in proportion to
/// their rates just measured (the GPU's from the column `gpu_column`), to
/// compare with the sum of the two.
fn split_contestant(
    global: &GlobalArgs,
    results: &[Measurement],
    gpu_column: &str,
) -> Result<Option<Contestant>, String> {
    if global.backend != BackendArg::Auto {
        return Ok(None);
    }
    let gpu = results
        .iter()
        .find(|result| result.contestant == gpu_column)
        .map(|result| result.gb_per_sec);
    let (Some(gpu), Some((threads, cpu))) = (gpu, widest_cpu(results)) else {
        return Ok(None);
    };
    let share = gpu / (gpu + cpu);
    if !share.is_finite() {
        return Ok(None);
    }
    let engine = global
        .builder(Backend::Auto)
        .threads(threads)
        .gpu_share(share)
        .build()
        .map_err(|error| error.to_string())?;
    Ok(Some(Contestant::Engine("split".to_owned(), engine)))
}

/// Runs the benchmark and writes what was asked for.
pub fn run(args: &BenchArgs, global: &GlobalArgs) -> Result<(), String> {
    let (contestants, gpu) = contestants(global)?;
    let detected = Engine::builder()
        .backend(Backend::Cpu)
        .threads(1)
        .build()
        .map_err(|error| error.to_string())?;
    let gpu_info = gpu.as_ref().and_then(|gpu| gpu.gpu_info().cloned());
    let machine = Machine {
        cpu_model: cpu_model(),
        cores: cores(),
        cpu_backend: detected.cpu_backend().to_string(),
        lanes: detected.lanes(),
        adapter: gpu_info.as_ref().map(|info| info.to_string()),
        adapter_type: gpu_info
            .as_ref()
            .map(|info| info.device_type.name().to_owned()),
    };
    let progress = global.progress(
        Some((args.sizes.len() * (contestants.len() + 1)) as u64),
        "cells",
    );
    let ceiling = ceiling_gb_per_sec(args.reps);
    let mut cases = Vec::new();
    for &size in &args.sizes {
        let case = Case::generate(size, args.bytes, args.count);
        if case.count() == 0 {
            return Err("--count 0 leaves nothing to hash: give at least 1".to_owned());
        }
        progress.set_message(format!("{size}"));
        progress.inc(1);
        let mut results = Vec::new();
        for contestant in &contestants {
            let ((measurement, kernel), stages) =
                measure(contestant, &case, args.warmup, args.reps, args.inject_fault)?;
            results.push(measurement);
            if args.stages && contestant.name() == "gpu" {
                for (stage, times) in [("pack", stages.pack), ("copy in", stages.copy_in)] {
                    if times.len() == args.reps.max(1) {
                        let name = format!("gpu {stage}");
                        results.push(Measurement::from_times(name, &case, times));
                    }
                }
            }
            if let Some(kernel) = kernel {
                // The shader alone, timed on the GPU: the end-to-end figure
                // minus transfers and host work.
                let name = format!("{} kernel", contestant.name());
                results.push(Measurement::from_times(name, &case, kernel));
            }
            progress.inc(1);
        }
        if let Some(gpu) = &gpu {
            // From pinned memory: no packing where the blobs are one
            // length.
            if let Some(pinned) = pinned("gpu pinned", gpu, &case)? {
                let ((measurement, _), _) =
                    measure(&pinned, &case, args.warmup, args.reps, args.inject_fault)?;
                results.push(measurement);
            }
            let runs = (args.warmup, args.reps);
            results.extend(measure_resident(gpu, &case, runs, args.stages)?);
            results.push(measure_bus(gpu, &case, args.reps)?);
        }
        let ordinary_split = split_contestant(global, &results, "gpu")?;
        // A split's GPU side, timed alone: whether it or the CPU's side
        // set the split's pace.
        let gpu_side = |split: &Contestant, stages: Stages| {
            let times = stages.gpu_side;
            (args.stages && times.len() == args.reps.max(1)).then(|| {
                Measurement::from_times(format!("{} gpu side", split.name()), &case, times)
            })
        };
        // The split and Auto from pinned memory too, where the GPU's share
        // costs the CPU no packing.
        let split = match split_contestant(global, &results, "gpu pinned")? {
            Some(Contestant::Engine(_, split)) => pinned("split pinned", &split, &case)?,
            _ => None,
        };
        let auto = contestants
            .iter()
            .find(|contestant| contestant.name() == "auto")
            .and_then(Contestant::engine);
        let auto = match auto {
            Some(auto) if split.is_some() => pinned("auto pinned", auto, &case)?,
            _ => None,
        };
        for split in ordinary_split.iter().chain(&split) {
            let ((measured, _), stages) =
                measure(split, &case, args.warmup, args.reps, args.inject_fault)?;
            results.push(measured);
            results.extend(gpu_side(split, stages));
        }
        if let Some(auto) = &auto {
            let ((measured, _), _) =
                measure(auto, &case, args.warmup, args.reps, args.inject_fault)?;
            results.push(measured);
        }
        let planned = contestants.iter().chain(&ordinary_split).chain(&split);
        let plans = planned.chain(&auto).filter_map(|contestant| {
            let (name, engine, bytes): (_, _, &[u8]) = match contestant {
                Contestant::Engine(name, engine) => (name, engine, &case.data),
                Contestant::Pinned(name, engine, buffer) => (name, engine, buffer),
                _ => return None,
            };
            let plan = engine.plan_packed(bytes, &case.offsets);
            (engine.backend() == Backend::Auto).then(|| AutoPlan {
                contestant: name.clone(),
                choice: match plan.choice {
                    Choice::Cpu => "cpu".to_owned(),
                    Choice::Gpu => "gpu".to_owned(),
                    Choice::Split {
                        gpu_blobs,
                        packing_threads,
                    } => {
                        let share = gpu_blobs as f64 / case.count() as f64;
                        match packing_threads {
                            0 => format!("split {share:.2}"),
                            packers => format!("split {share:.2}, {packers} packing"),
                        }
                    }
                },
                predicted_gb_per_sec: case.data.len() as f64 / plan.predicted_sec() / 1e9,
            })
        });
        let plans = plans.collect();
        let baseline = results
            .iter()
            .find(|result| result.contestant == Contestant::HashLoop.name())
            .map_or(f64::NAN, |result| result.median_sec);
        for result in &mut results {
            result.speedup = baseline / result.median_sec;
        }
        cases.push(CaseReport {
            size: size.to_string(),
            blobs: case.count(),
            bytes: case.data.len(),
            results,
            plans,
        });
    }
    progress.finish_and_clear();
    let report = Report {
        machine,
        settings: Settings {
            bytes_per_case: args.bytes,
            count_per_case: args.count,
            warmup: args.warmup,
            reps: args.reps,
        },
        ceiling_gb_per_sec: ceiling,
        cases,
    };
    // A reader that stopped early (`| head`) still gets the files below.
    match io::stdout().lock().write_all(report.table().as_bytes()) {
        Err(error) if error.kind() != io::ErrorKind::BrokenPipe => {
            return Err(format!("writing the table: {error}"));
        }
        _ => {}
    }
    let write = |path: &PathBuf, text: String| {
        std::fs::write(path, text).map_err(|error| format!("{}: {error}", path.display()))
    };
    if let Some(path) = &args.json {
        write(path, report.json())?;
    }
    if let Some(path) = &args.csv {
        write(path, report.csv())?;
    }
    if let Some(path) = &args.plot {
        plot::write_svg(&report, path)?;
    }
    Ok(())
}
