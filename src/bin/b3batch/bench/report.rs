//! The benchmark's results and the ways they are written: the table on
//! stdout, JSON and CSV files with every figure and the machine.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::measure::{widest_cpu, Measurement};

/// What the numbers were measured on.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Machine {
    pub cpu_model: String,
    pub cores: usize,
    pub cpu_backend: String,
    pub lanes: usize,
    /// The GPU adapter, when one took part.
    pub adapter: Option<String>,
    pub adapter_type: Option<String>,
}

/// How the numbers were measured.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Settings {
    pub bytes_per_case: usize,
    pub count_per_case: Option<usize>,
    pub warmup: usize,
    pub reps: usize,
}

/// One row: a blob size and every contestant's figures.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct CaseReport {
    pub size: String,
    pub blobs: usize,
    pub bytes: usize,
    pub results: Vec<Measurement>,
    /// What each Auto column planned for the batch.
    #[serde(default)]
    pub plans: Vec<AutoPlan>,
}

/// An Auto column's plan for a case: `cpu`, `gpu` or `split 0.29` (the
/// GPU's share of the blobs; `split 0.29, 3 packing` where threads are
/// kept to pack that share), and the rate the model predicted for it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct AutoPlan {
    pub contestant: String,
    pub choice: String,
    pub predicted_gb_per_sec: f64,
}

/// Everything one run measured.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Report {
    pub machine: Machine,
    pub settings: Settings,
    /// `blake3::Hasher::update` over one 32 MiB input on one thread, GB/s.
    pub ceiling_gb_per_sec: f64,
    pub cases: Vec<CaseReport>,
}

const CELL: usize = 20;

impl Report {
    /// The table: a row of two lines per blob size (GB/s with the spread,
    /// then Mblobs/s with the speedup over the one-thread loop), a column
    /// per contestant.
    pub fn table(&self) -> String {
        let mut text = String::new();
        let machine = &self.machine;
        let _ = writeln!(
            text,
            "cpu: {} ({} cores), {} backend, {} lanes; gpu: {}",
            machine.cpu_model,
            machine.cores,
            machine.cpu_backend,
            machine.lanes,
            machine.adapter.as_deref().unwrap_or("none")
        );
        let _ = writeln!(
            text,
            "ceiling (blake3 on one large input, 1 thread): {:.2} GB/s; median of {} after {} warm-up; \
             cells: GB/s ±spread, Mblobs/s, speedup over blake3 loop 1t",
            self.ceiling_gb_per_sec, self.settings.reps, self.settings.warmup
        );
        // Columns: every contestant of any case, in first-seen order (the
        // GPU kernel column is missing where blobs over 1 KiB went to the CPU).
        let mut columns: Vec<&str> = Vec::new();
        for result in self.cases.iter().flat_map(|case| &case.results) {
            if !columns.contains(&result.contestant.as_str()) {
                columns.push(&result.contestant);
            }
        }
        let _ = write!(text, "{:<16}", "blobs");
        for column in &columns {
            let _ = write!(text, "{column:>CELL$}");
        }
        text.push('\n');
        for case in &self.cases {
            let cell = |column: &str, line: fn(&Measurement) -> String| {
                let found = case
                    .results
                    .iter()
                    .find(|result| result.contestant == column);
                format!("{:>CELL$}", found.map_or("-".to_owned(), line))
            };
            let _ = write!(text, "{:<16}", case.size);
            for column in &columns {
                text += &cell(column, |result| {
                    format!("{:.2} ±{:.0}%", result.gb_per_sec, 100.0 * result.spread())
                });
            }
            text.push('\n');
            let _ = write!(text, "{:<16}", format!("  {} blobs", case.blobs));
            for column in &columns {
                text += &cell(column, |result| {
                    format!("{:.1}M {:.2}x", result.mblobs_per_sec, result.speedup)
                });
            }
            text.push('\n');
        }
        text += &self.gpu_ratios();
        text
    }

    /// Where a GPU took part, each case's end-to-end rate against the bus
    /// and the resident path, one call at a time and queued, against the
    /// shader alone.
    fn gpu_ratios(&self) -> String {
        let mut text = String::new();
        for case in &self.cases {
            let rate = |name: &str| {
                case.results
                    .iter()
                    .find(|result| result.contestant == name)
                    .map(|result| result.gb_per_sec)
            };
            let mut parts = Vec::new();
            if let (Some(gpu), Some(bus)) = (rate("gpu"), rate("gpu bus")) {
                parts.push(format!("end to end ÷ bus {:.2}", gpu / bus));
            }
            if let (Some(pinned), Some(gpu)) = (rate("gpu pinned"), rate("gpu")) {
                parts.push(format!("pinned ÷ end to end {:.2}", pinned / gpu));
            }
            if let (Some(kernel), Some(resident)) = (rate("gpu kernel"), rate("gpu resident")) {
                parts.push(format!("resident ÷ shader {:.2}", resident / kernel));
            }
            if let (Some(kernel), Some(queued)) =
                (rate("gpu resident kernel"), rate("gpu resident queued"))
            {
                parts.push(format!(
                    "resident queued ÷ resident shader {:.2}",
                    queued / kernel
                ));
            }
            if let (Some(kernel), Some(resident)) =
                (rate("gpu kernel"), rate("gpu resident kernel"))
            {
                parts.push(format!(
                    "resident shader ÷ slab shader {:.2}",
                    resident / kernel
                ));
            }
            if let (Some(split), Some(gpu), Some((threads, cpu))) =
                (rate("split"), rate("gpu"), widest_cpu(&case.results))
            {
                parts.push(format!(
                    "split ÷ (gpu + cpu {threads}t) {:.2}",
                    split / (gpu + cpu)
                ));
            }
            if let (Some(split), Some(gpu), Some((threads, cpu))) = (
                rate("split pinned"),
                rate("gpu pinned"),
                widest_cpu(&case.results),
            ) {
                parts.push(format!(
                    "split pinned ÷ (gpu pinned + cpu {threads}t) {:.2}",
                    split / (gpu + cpu)
                ));
            }
            // How long a split's GPU side took of the whole: near 1, it set
            // the pace; well under, the CPU's side did.
            for split in ["split", "split pinned"] {
                if let (Some(whole), Some(gpu_side)) =
                    (rate(split), rate(&format!("{split} gpu side")))
                {
                    parts.push(format!("{split}'s gpu side {:.2} of it", whole / gpu_side));
                }
            }
            // Auto against the best forced choice, from each kind of memory.
            for (auto, forced) in [
                ("auto", ["gpu", "split"]),
                ("auto pinned", ["gpu pinned", "split pinned"]),
            ] {
                let best = forced
                    .iter()
                    .filter_map(|name| rate(name))
                    .chain(widest_cpu(&case.results).map(|(_, cpu)| cpu))
                    .fold(f64::NAN, f64::max);
                if let Some(auto_rate) = rate(auto).filter(|_| best.is_finite()) {
                    parts.push(format!("{auto} ÷ best forced {:.2}", auto_rate / best));
                }
            }
            for plan in &case.plans {
                parts.push(format!(
                    "{} planned {} (predicted {:.1})",
                    plan.contestant, plan.choice, plan.predicted_gb_per_sec
                ));
            }
            if !parts.is_empty() {
                let _ = writeln!(text, "{:<16}{}", case.size, parts.join(", "));
            }
        }
        text
    }

    pub fn json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// One line per (size, contestant), the machine repeated on each so the
    /// file stands alone in a spreadsheet.
    pub fn csv(&self) -> String {
        let mut text = String::from(
            "size,blobs,bytes,contestant,median_sec,min_sec,max_sec,gb_per_sec,mblobs_per_sec,\
             speedup,ceiling_gb_per_sec,cpu_model,cores,cpu_backend,lanes,adapter\n",
        );
        let machine = &self.machine;
        for case in &self.cases {
            for result in &case.results {
                let fields = [
                    case.size.clone(),
                    case.blobs.to_string(),
                    case.bytes.to_string(),
                    result.contestant.clone(),
                    result.median_sec.to_string(),
                    result.min_sec.to_string(),
                    result.max_sec.to_string(),
                    result.gb_per_sec.to_string(),
                    result.mblobs_per_sec.to_string(),
                    result.speedup.to_string(),
                    self.ceiling_gb_per_sec.to_string(),
                    machine.cpu_model.clone(),
                    machine.cores.to_string(),
                    machine.cpu_backend.clone(),
                    machine.lanes.to_string(),
                    machine.adapter.clone().unwrap_or_default(),
                ];
                let line: Vec<String> = fields.iter().map(|field| csv_field(field)).collect();
                text += &line.join(",");
                text.push('\n');
            }
        }
        text
    }
}

/// Quotes a field that holds a comma, a quote or a line break.
fn csv_field(field: &str) -> String {
    if field.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_owned()
    }
}
