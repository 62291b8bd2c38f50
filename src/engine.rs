//! [`Engine`]: the reusable hasher that holds the chosen backend and threads.

use std::fmt;
use std::io::Write as _;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use blake3::Hash;

use crate::blobs::{check_output, BlobSource, Offset, Packed, Records, Slices, Span, Subset};
use crate::consts::CHUNK_LEN;
use crate::cpu::batch::{hash_checking, hash_one, hash_source, Threads};
use crate::cpu::{CpuBackend, Kernel};
use crate::error::{Error, ErrorKind};
#[cfg(feature = "gpu")]
use crate::gpu::GpuBlobs;
use crate::gpu::{self, DeviceSettings, Gpu, GpuInfo, GpuTimings, GpuUpload};
use crate::mode::Mode;
use crate::offsets::SharedCheck;
use crate::pinned::PinnedBuffer;
use crate::profile::{cpu_model, profile_path};
use crate::scheduler::{self, BatchShape, Choice, GpuRates, Plan, Profile};

mod blob_hasher;
mod extended;
mod files;
mod input;
mod output;
#[cfg(any(unix, windows))]
mod positional;
mod stream;

pub use blob_hasher::{BlobDigest, BlobHasher};
pub use files::{FileDigest, FileHasher};
/// The name [`HasherOutput`] had while only [`FileHasher`] took it.
#[doc(hidden)]
pub use output::HasherOutput as FileOutput;
pub use output::HasherOutput;

/// Offsets from which a packed batch on several CPU threads is checked by
/// those threads ([`crate::offsets::SharedCheck`]) rather than by the caller
/// alone before them: about 10 us of checking, and enough blobs that the
/// batch is split between threads anyway.
const SHARED_CHECK_MIN_OFFSETS: usize = 16 * 1024;

/// Batches of up to this many blobs whose total bytes are not known at
/// once (slices) are planned from every length; larger ones from
/// [`SHAPE_SAMPLES`] of them. Auto pays for the shape before it hashes: a
/// pass over millions of lengths cost a sixth of the time of 64-byte blobs
/// on 16 cores, and each sample is a cache miss. With cold caches on this
/// project's development machine, every length of 16 Ki blobs took 11 us,
/// of 64 Ki 46 us; 4096 samples of 256 Ki offsets 38 us, 1024 samples
/// 18 us (of 4 Mi, 125 and 38 us), against about 350 us for 16 MiB of
/// blobs on 16 cores.
const EXACT_SHAPE_MAX: usize = 16 * 1024;
/// Samples of a batch's lengths for its shape. Where its total is known
/// (packed offsets, records), a batch of more blobs is sampled, as the
/// total accounts for long blobs the sample misses: on 2 threads, every
/// length of 16 Ki 64-byte blobs made a CPU plan 15–20 us slower than the
/// CPU engine's 70 us, a sample 2–4 us.
const SHAPE_SAMPLES: usize = 1024;

/// Threads an engine starts per CPU this process may run on, at most.
pub(crate) const THREADS_PER_CPU: usize = 16;
/// ... and at least this many, whatever the CPUs: a container's CPU quota
/// can make a large host report two, and a caller sizing by the host's
/// count then gets a slower engine rather than an error.
pub(crate) const THREADS_FLOOR: usize = 256;

/// The most threads [`EngineBuilder::threads`] takes on this machine: 16 per
/// CPU this process may run on, and at least 256.
///
/// Threads past the CPUs only wait their turn, and an idle pool worker
/// searches every other's queue before it sleeps, so a pool far larger
/// than the CPUs spends batches waking: on 2 CPUs, 100 000 records of 100
/// bytes took 1.5 ms on 2 threads, 4 to 15 ms on 256, 18 to 310 ms on
/// 1000 and seconds on 2000, and a pool of 200 000 threads had not started
/// after two minutes.
pub fn max_threads() -> usize {
    threads_limit(available_cpus())
}

/// [`max_threads`] on `cpus` CPUs.
fn threads_limit(cpus: usize) -> usize {
    cpus.saturating_mul(THREADS_PER_CPU).max(THREADS_FLOOR)
}

/// The CPUs this process may run on (its affinity and CPU quota), or 1 if
/// the system does not say.
fn available_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |cpus| cpus.get())
}

/// Where batches run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Backend {
    /// Per batch, the CPU, the GPU or both at once, whichever the cost
    /// model predicts is fastest from the engine's [`Profile`]. Without a
    /// calibrated profile, and on software adapters, always the CPU.
    #[default]
    Auto,
    /// The CPU lane kernel across cores.
    Cpu,
    /// A GPU through `wgpu`, one shader invocation per blob of at most
    /// 1 KiB; larger blobs of the batch are hashed on the CPU at the same
    /// time. Building the engine fails when no adapter is found.
    Gpu,
}

/// A configured batch hasher. Cheap to clone and share between threads;
/// build one and reuse it, since building may start threads.
///
/// ```
/// use blake3_batch::{Backend, Engine};
///
/// let engine = Engine::builder().backend(Backend::Cpu).threads(2).build()?;
/// let digests = engine.hash_many(&[b"alpha".as_slice(), b"beta"])?;
/// assert_eq!(digests[1], blake3::hash(b"beta"));
/// # Ok::<(), blake3_batch::Error>(())
/// ```
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

struct Inner {
    backend: Backend,
    kernel: Kernel,
    threads: usize,
    /// `None` with `threads > 1`: rayon's global pool.
    pool: Option<rayon::ThreadPool>,
    /// The opened GPU, for [`Backend::Gpu`], or for [`Backend::Auto`] when
    /// the profile has a usable one.
    gpu: Option<Gpu>,
    /// The rates [`Backend::Auto`] plans with.
    profile: Profile,
    /// The GPU's share of every batch, instead of the plan's.
    gpu_share: Option<f64>,
}

/// Settings for an [`Engine`]; see [`Engine::builder`].
#[derive(Clone, Debug, Default)]
pub struct EngineBuilder {
    backend: Backend,
    threads: Option<usize>,
    cpu: Option<CpuBackend>,
    gpu_memory_budget: Option<u64>,
    gpu_timeout: Option<Duration>,
    gpu_device: DeviceSettings,
    wgpu: Option<gpu::CallerDevice>,
    profile: Option<Profile>,
    profile_file: Option<std::path::PathBuf>,
    gpu_share: Option<f64>,
}

impl EngineBuilder {
    /// Where batches run (default [`Backend::Auto`]).
    pub fn backend(mut self, backend: Backend) -> Self {
        self.backend = backend;
        self
    }

    /// Exactly this many threads hash a batch (default: rayon's global pool,
    /// one thread per core). `1` keeps all work on the calling thread; from
    /// `2` on, the calling thread is one of them and the engine starts a
    /// pool of the other `threads - 1`. At most [`max_threads`] (16 per
    /// CPU, and at least 256): more is an error.
    pub fn threads(mut self, threads: usize) -> Self {
        self.threads = Some(threads);
        self
    }

    /// Forces a CPU instruction set instead of the best detected one (for
    /// tests and benchmarks). Without it, the `B3BATCH_CPU` environment
    /// variable (`portable`, `sse41`, `avx2`, `avx512`, `neon`) may force one.
    /// Either way, one this CPU lacks makes [`build`](Self::build) fail.
    pub fn cpu_backend(mut self, cpu: CpuBackend) -> Self {
        self.cpu = Some(cpu);
        self
    }

    /// GPU memory, in bytes, the engine may hold for its slabs (default
    /// 256 MiB). Batches larger than the slabs stream through them, so this
    /// bounds GPU memory whatever the batch size; blobs longer than a
    /// slab's data (about a fifteenth of the budget) stream through in
    /// subtrees. It must be at least 15 KiB.
    pub fn gpu_memory_budget(mut self, bytes: u64) -> Self {
        self.gpu_memory_budget = Some(bytes);
        self
    }

    /// The longest to wait for the GPU to finish one slab before failing
    /// with an error (default 60 s).
    pub fn gpu_timeout(mut self, timeout: Duration) -> Self {
        self.gpu_timeout = Some(timeout);
        self
    }

    /// How blobs reach the GPU (default [`GpuUpload::Copy`], or what the
    /// `B3BATCH_GPU_UPLOAD` environment variable says: `copy`, `direct` or
    /// `host`). [`build`](Self::build) fails if the adapter cannot do it.
    pub fn gpu_upload(mut self, upload: GpuUpload) -> Self {
        self.gpu_device.upload = Some(upload);
        self
    }

    /// Runs the engine's GPU work on this device and queue instead of an
    /// adapter it opens itself, so that blobs already in the caller's GPU
    /// buffers can be hashed in place ([`Engine::hash_gpu_blobs`]). The GPU
    /// is then there whatever the backend; [`Backend`] still decides where
    /// batches from host memory run. The device keeps its own error handler
    /// and device-lost callback: the engine captures the errors of its own
    /// calls.
    #[cfg(feature = "gpu")]
    pub fn wgpu_device(mut self, device: wgpu::Device, queue: wgpu::Queue) -> Self {
        self.wgpu = Some((device, queue));
        self
    }

    /// Makes the GPU path fail on purpose (see `GpuFault`): for tests of
    /// error handling only, and absent from release builds.
    #[cfg(debug_assertions)]
    #[doc(hidden)]
    pub fn gpu_fault(mut self, fault: crate::GpuFault) -> Self {
        self.gpu_device.fault = Some(fault);
        self
    }

    /// Invocations per workgroup of the GPU shader (default 64, or the
    /// `B3BATCH_GPU_WORKGROUP` environment variable): a power of two from
    /// 32 to the adapter's largest, for tuning on a given card.
    pub fn gpu_workgroup_size(mut self, size: u32) -> Self {
        self.gpu_device.workgroup_size = Some(size);
        self
    }

    /// The rates [`Backend::Auto`] plans with, instead of the profile saved
    /// by calibration (for tests, and for callers that keep their own).
    pub fn profile(mut self, profile: Profile) -> Self {
        self.profile = Some(profile);
        self
    }

    /// Loads the saved profile from this file instead of
    /// [`profile_path`](crate::profile_path)'s.
    pub fn profile_file(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.profile_file = Some(path.into());
        self
    }

    /// Splits every batch at this share instead of the cost model's choice
    /// ([`Backend::Auto`] only): the first `share` of the batch's blobs go
    /// to the GPU, the rest to the CPU, both at once; `0.0` keeps batches
    /// on the CPU, `1.0` sends them to the GPU (its blobs over 1 KiB to the
    /// CPU beside it). For harnesses that measure the split, and callers
    /// who know their best one. The engine opens the GPU as for
    /// [`Backend::Gpu`]; [`build`](Self::build) fails without one, or when
    /// `share` is not a number from 0 to 1.
    pub fn gpu_share(mut self, share: f64) -> Self {
        self.gpu_share = Some(share);
        self
    }

    /// Checks the settings, detects the CPU, starts the threads, loads the
    /// profile and, for [`Backend::Gpu`] (or [`Backend::Auto`] with a
    /// profile whose GPU is worth using), opens the adapter and compiles the
    /// shader. A corrupt or foreign saved profile is ignored with a warning
    /// on stderr.
    pub fn build(self) -> Result<Engine, Error> {
        // The settings first, before a GPU is opened.
        match self.threads {
            Some(0) => return Err(ErrorKind::ZeroThreads.into()),
            // Under the floor no CPU count refuses it: no need to ask.
            Some(threads) if threads > THREADS_FLOOR => {
                let cpus = available_cpus();
                let most = threads_limit(cpus);
                if threads > most {
                    let too_many = ErrorKind::TooManyThreads {
                        threads,
                        cpus,
                        most,
                    };
                    return Err(too_many.into());
                }
            }
            _ => {}
        }
        let injected = self.profile.is_some();
        let mut profile = self
            .profile
            .or_else(|| Profile::load_saved(self.profile_file.or_else(profile_path).as_deref()))
            .unwrap_or_else(|| Profile::conservative(cpu_model()));
        let budget = self.gpu_memory_budget.unwrap_or(gpu::DEFAULT_BUDGET);
        let timeout = self.gpu_timeout.unwrap_or(gpu::DEFAULT_TIMEOUT);
        let open = || Gpu::open(budget, timeout, self.gpu_device);
        if let Some(share) = self.gpu_share {
            let reason = if self.backend != Backend::Auto {
                "the share replaces Backend::Auto's choice: use it with Backend::Auto"
            } else if !(0.0..=1.0).contains(&share) {
                "give a number from 0 to 1"
            } else {
                ""
            };
            if !reason.is_empty() {
                let share = share.to_string();
                let reason = reason.to_owned();
                return Err(ErrorKind::GpuShare { share, reason }.into());
            }
        }
        let gpu = match (self.wgpu.clone(), self.backend) {
            (Some(caller), _) => Some(Gpu::adopt(caller, budget, timeout, self.gpu_device)?),
            (None, Backend::Gpu) => Some(open()?),
            (None, Backend::Auto) if self.gpu_share.is_some() => Some(open()?),
            (None, Backend::Auto) if profile.gpu.as_ref().is_some_and(|gpu| !gpu.software) => {
                // Auto falls back to the CPU when the GPU is gone or is not
                // the one the saved profile measured.
                match open() {
                    Ok(gpu) if injected || profile.adapter.as_deref() == Some(&gpu.info().name) => {
                        Some(gpu)
                    }
                    _ => {
                        profile.gpu = None;
                        None
                    }
                }
            }
            (None, Backend::Auto | Backend::Cpu) => None,
        };
        let kernel = match self.cpu.map(Ok).or_else(CpuBackend::from_env) {
            Some(cpu) => Kernel::new(cpu?)?,
            None => Kernel::detect(),
        };
        let (threads, pool) = match self.threads {
            None => (rayon::current_num_threads(), None),
            // 0 was refused above.
            Some(0 | 1) => (1, None),
            Some(threads) => {
                // The calling thread is the last of the `threads` that hash
                // (see `cpu::share`).
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads - 1)
                    .thread_name(|index| format!("b3batch-{index}"))
                    .build()
                    .map_err(|error| ErrorKind::ThreadPool {
                        threads,
                        reason: error.to_string(),
                    })?;
                (threads, Some(pool))
            }
        };
        let mut engine = Engine::from_parts(self.backend, kernel, threads, pool);
        if let Some(inner) = Arc::get_mut(&mut engine.inner) {
            inner.gpu = gpu;
            inner.profile = profile;
            inner.gpu_share = self.gpu_share;
        }
        Ok(engine)
    }
}

impl Engine {
    fn from_parts(
        backend: Backend,
        kernel: Kernel,
        threads: usize,
        pool: Option<rayon::ThreadPool>,
    ) -> Engine {
        Engine {
            inner: Arc::new(Inner {
                backend,
                kernel,
                threads,
                pool,
                gpu: None,
                profile: Profile::conservative(cpu_model()),
                gpu_share: None,
            }),
        }
    }

    /// Settings for a new engine.
    pub fn builder() -> EngineBuilder {
        EngineBuilder::default()
    }

    /// The backend asked for.
    pub fn backend(&self) -> Backend {
        self.inner.backend
    }

    /// The CPU instruction set in use.
    pub fn cpu_backend(&self) -> CpuBackend {
        self.inner.kernel.backend()
    }

    /// Blobs hashed side by side by one CPU kernel call.
    pub fn lanes(&self) -> usize {
        self.cpu_backend().lanes()
    }

    /// Threads that hash a batch.
    pub fn threads(&self) -> usize {
        self.inner.threads
    }

    /// The GPU adapter in use, with the limits the engine works within;
    /// `None` unless the backend is [`Backend::Gpu`].
    pub fn gpu_info(&self) -> Option<&GpuInfo> {
        self.inner.gpu.as_ref().map(Gpu::info)
    }

    /// The rates [`Backend::Auto`] plans with.
    pub fn profile(&self) -> &Profile {
        &self.inner.profile
    }

    /// Measures this machine's rates (the CPU backend on one thread and on
    /// the engine's threads; the GPU, when the engine has one) in well
    /// under a second. Save the result with [`Profile::save`] to
    /// [`profile_path`](crate::profile_path) for later engines to load.
    pub fn calibrate(&self) -> Result<Profile, Error> {
        crate::calibrate::calibrate(self)
    }

    /// Where a batch of this shape would run, and the predicted times
    /// behind the choice. [`Backend::Cpu`] and [`Backend::Gpu`] engines,
    /// and those given a [`gpu_share`](EngineBuilder::gpu_share), report
    /// their fixed choice with the model's predictions beside it.
    pub fn plan(&self, shape: &BatchShape) -> Plan {
        self.plan_where(shape, false)
    }

    /// Where this batch of packed blobs would run, as [`plan`](Self::plan)
    /// says, knowing where it lies: the GPU copies packed blobs from a
    /// [`PinnedBuffer`] without packing them, which changes the plan. The
    /// offsets are not checked.
    pub fn plan_packed<O: Offset>(&self, data: &[u8], offsets: &[O]) -> Plan {
        self.plan_where(
            &packed_shape(offsets),
            self.may_copy_in_place(data, offsets),
        )
    }

    /// [`plan`](Self::plan) for a batch the GPU copies from a pinned
    /// buffer where it lies if `in_place`.
    fn plan_where(&self, shape: &BatchShape, in_place: bool) -> Plan {
        let mut profile_view;
        let profile = if self.inner.gpu.is_some() {
            &self.inner.profile
        } else {
            profile_view = self.inner.profile.clone();
            profile_view.gpu = None;
            &profile_view
        };
        let threads = self.inner.threads;
        let mut plan = scheduler::plan_for(shape, profile, threads, in_place);
        match (self.inner.backend, self.inner.gpu_share) {
            (Backend::Cpu, _) => plan.choice = Choice::Cpu,
            (Backend::Gpu, _) => plan.choice = Choice::Gpu,
            (Backend::Auto, Some(share)) => {
                plan = scheduler::plan_share(shape, profile, threads, in_place, share)
            }
            (Backend::Auto, None) => {}
        }
        plan
    }

    /// Where the last GPU batch spent its time (pack, upload, dispatch,
    /// download, readback); `None` before the first GPU batch.
    pub fn last_gpu_timings(&self) -> Option<GpuTimings> {
        self.inner.gpu.as_ref().and_then(Gpu::last_timings)
    }

    /// `blake3::hash` of every blob, in order.
    pub fn hash_many<B: AsRef<[u8]> + Sync>(&self, blobs: &[B]) -> Result<Vec<Hash>, Error> {
        self.collect(Mode::Hash, blobs).map(into_hashes)
    }

    /// `blake3::keyed_hash(key, blob)` of every blob, in order.
    pub fn keyed_hash_many<B: AsRef<[u8]> + Sync>(
        &self,
        key: &[u8; 32],
        blobs: &[B],
    ) -> Result<Vec<Hash>, Error> {
        self.collect(Mode::KeyedHash(key), blobs).map(into_hashes)
    }

    /// `blake3::derive_key(context, blob)` of every blob, in order; the
    /// context string is hashed once for the whole batch.
    pub fn derive_key_many<B: AsRef<[u8]> + Sync>(
        &self,
        context: &str,
        blobs: &[B],
    ) -> Result<Vec<[u8; 32]>, Error> {
        self.collect(Mode::DeriveKey(context), blobs)
    }

    /// Hashes every blob of a slice into `out` (one slot per blob).
    ///
    /// ```
    /// use blake3_batch::{Engine, Mode};
    ///
    /// let engine = Engine::builder().build()?;
    /// let blobs = ["a", "bb", "ccc"];
    /// let mut out = [[0u8; 32]; 3];
    /// engine.hash_slices_into(Mode::KeyedHash(&[7; 32]), &blobs, &mut out)?;
    /// assert_eq!(out[2], *blake3::keyed_hash(&[7; 32], b"ccc").as_bytes());
    /// # Ok::<(), blake3_batch::Error>(())
    /// ```
    pub fn hash_slices_into<B: AsRef<[u8]> + Sync>(
        &self,
        mode: Mode,
        blobs: &[B],
        out: &mut [[u8; 32]],
    ) -> Result<(), Error> {
        self.run(mode, &Slices(blobs), out)
    }

    /// Hashes packed blobs, Arrow style: blob `i` is
    /// `data[offsets[i]..offsets[i + 1]]`, so `n` blobs take `n + 1` offsets
    /// (`u32` or `u64`). Offsets need not start at 0, must never decrease
    /// and must stay within `data`.
    ///
    /// ```
    /// use blake3_batch::{Engine, Mode};
    ///
    /// let engine = Engine::builder().build()?;
    /// let data = b"helloworld!";
    /// let offsets: [u32; 4] = [0, 5, 10, 11];
    /// let mut out = [[0u8; 32]; 3];
    /// engine.hash_packed_into(Mode::Hash, data, &offsets, &mut out)?;
    /// assert_eq!(out[1], *blake3::hash(b"world").as_bytes());
    /// # Ok::<(), blake3_batch::Error>(())
    /// ```
    pub fn hash_packed_into<O: Offset>(
        &self,
        mode: Mode,
        data: &[u8],
        offsets: &[O],
        out: &mut [[u8; 32]],
    ) -> Result<(), Error> {
        // With an output of the wrong length the serial path runs, which
        // reports bad offsets first, as a batch of any size does.
        if self.inner.threads > 1
            && offsets.len() > SHARED_CHECK_MIN_OFFSETS
            && out.len() == offsets.len() - 1
            && self.runs_on_cpu_alone(
                offsets.len() - 1,
                Some(packed_bytes(offsets)),
                || packed_shape(offsets),
                self.may_copy_in_place(data, offsets),
            )
        {
            let check = SharedCheck::new(data, offsets);
            return hash_checking(self.inner.kernel, self.cpu_threads(), mode, &check, out);
        }
        self.run(mode, &self.checked_packed(data, offsets)?, out)
    }

    /// `data` cut at `offsets`, the offsets checked first: on every thread
    /// where the batch is large enough for that to pay, as before the GPU
    /// or a split runs. In one pass, 16 Mi offsets took 11 ms, a third of
    /// hashing their 64-byte blobs.
    fn checked_packed<'a, O: Offset>(
        &self,
        data: &'a [u8],
        offsets: &'a [O],
    ) -> Result<Packed<'a, O>, Error> {
        if self.inner.threads > 1 && offsets.len() > SHARED_CHECK_MIN_OFFSETS {
            let check = SharedCheck::new(data, offsets);
            let threads: Vec<usize> = (0..self.inner.threads).collect();
            self.cpu_threads()
                .for_each(threads, |_| check.scan_pieces());
            return check.verdict();
        }
        Packed::new(data, offsets)
    }

    /// Hashes `data` cut into records of `record_size` bytes each; the data
    /// length must be a whole multiple of the record size.
    ///
    /// ```
    /// use blake3_batch::{Engine, Mode};
    ///
    /// let engine = Engine::builder().build()?;
    /// let data = [1u8; 96]; // three 32-byte records
    /// let mut out = [[0u8; 32]; 3];
    /// engine.hash_records_into(Mode::DeriveKey("app 2026 ids"), &data, 32, &mut out)?;
    /// assert_eq!(out[0], blake3::derive_key("app 2026 ids", &[1; 32]));
    /// # Ok::<(), blake3_batch::Error>(())
    /// ```
    pub fn hash_records_into(
        &self,
        mode: Mode,
        data: &[u8],
        record_size: usize,
        out: &mut [[u8; 32]],
    ) -> Result<(), Error> {
        self.run(mode, &Records::new(data, record_size)?, out)
    }

    fn collect<B: AsRef<[u8]> + Sync>(
        &self,
        mode: Mode,
        blobs: &[B],
    ) -> Result<Vec<[u8; 32]>, Error> {
        let mut out = vec![[0u8; 32]; blobs.len()];
        self.hash_slices_into(mode, blobs, &mut out)?;
        Ok(out)
    }

    fn run<S: BlobSource>(
        &self,
        mode: Mode,
        source: &S,
        out: &mut [[u8; 32]],
    ) -> Result<(), Error> {
        check_output(source.count(), out)?;
        let gpu = match (&self.inner.gpu, self.inner.backend) {
            (Some(gpu), Backend::Gpu | Backend::Auto) if !out.is_empty() => gpu,
            _ => {
                self.run_cpu(mode, source, out);
                return Ok(());
            }
        };
        if self.inner.backend == Backend::Gpu {
            let threads = self.cpu_threads();
            return self.run_gpu(gpu, mode, source, out, LongBlobs::OnGpu, threads);
        }
        // Auto never fails on a GPU error: the CPU redoes that part.
        let in_place = gpu.copies_in_place(source);
        let count = source.count();
        let bytes = S::CONTIGUOUS.then(|| source.bytes(0, count) as u64);
        let choice = self.auto_choice(count, bytes, || self.shape_of(source), in_place);
        self.run_choice(gpu, mode, source, out, choice, in_place);
        Ok(())
    }

    /// Runs a batch where `choice` says, as Auto does: a GPU failure is
    /// redone on the CPU. `in_place`: the GPU copies the blobs from a
    /// pinned buffer where they lie.
    fn run_choice<S: BlobSource>(
        &self,
        gpu: &Gpu,
        mode: Mode,
        source: &S,
        out: &mut [[u8; 32]],
        choice: Choice,
        in_place: bool,
    ) {
        // Blobs over 1 KiB go to the GPU where the profile has a rate for
        // them there, as the plan then counts them.
        let long = match (self.inner.profile.gpu.as_ref()).is_some_and(GpuRates::takes_large) {
            true => LongBlobs::OnGpu,
            false => LongBlobs::OnCpu,
        };
        match choice {
            Choice::Cpu => self.run_cpu(mode, source, out),
            Choice::Gpu => {
                if self
                    .run_gpu(gpu, mode, source, out, long, self.cpu_threads())
                    .is_err()
                {
                    self.run_cpu(mode, source, out);
                }
            }
            Choice::Split {
                gpu_blobs,
                packing_threads,
            } => {
                let (gpu_out, cpu_out) = out.split_at_mut(gpu_blobs);
                let gpu_part = Span {
                    source,
                    start: 0,
                    len: gpu_blobs,
                };
                let cpu_part = Span {
                    source,
                    start: gpu_blobs,
                    len: cpu_out.len(),
                };
                // A share copied in place needs no packing: its host work
                // (reading digests back) stays on this thread rather than
                // queueing behind the CPU share's jobs in the pool, which
                // held the GPU share of 64-byte blobs to half its rate.
                // A packed share has threads of the pool kept free for its
                // packing: the pool's workers take the CPU share's jobs
                // first and run each until that share is done, so packing
                // asked of them meanwhile waits for the end of the CPU's
                // share.
                let all = self.cpu_threads();
                let (cpu_threads, gpu_threads) = match (in_place, packing_threads) {
                    (true, _) => (all, Threads::One),
                    (false, 0) => (all, all),
                    (false, packers) => {
                        let hashers = self.inner.threads.saturating_sub(packers).max(1);
                        (all.part(hashers), all.part(packers))
                    }
                };
                // The GPU's share's blobs it does not take (over a chunk
                // where the profile keeps them off the GPU) are hashed on
                // the CPU's side after its own share, as the plan counts
                // them, not on the few threads (or one) that feed the GPU.
                let (mut large, on_gpu) = GpuWork::plan(gpu, &gpu_part, long);
                let kernel = self.inner.kernel;
                let gpu_result = std::thread::scope(|scope| {
                    scope.spawn(|| {
                        hash_source(kernel, cpu_threads, mode, &cpu_part, cpu_out);
                        large.hash(kernel, cpu_threads, mode, &gpu_part);
                    });
                    on_gpu.hash(self, gpu, mode, &gpu_part, gpu_out, gpu_threads)
                });
                match gpu_result {
                    Ok(()) => large.put_into(gpu_out),
                    Err(_) => self.run_cpu(mode, &gpu_part, gpu_out),
                }
            }
        }
    }

    /// The `wgpu` device and queue the engine's GPU work runs on (its own,
    /// or the one given to [`EngineBuilder::wgpu_device`]), for creating
    /// buffers to hand to [`hash_gpu_blobs`](Self::hash_gpu_blobs);
    /// `None` when the engine has no GPU.
    #[cfg(feature = "gpu")]
    pub fn wgpu_device(&self) -> Option<(&wgpu::Device, &wgpu::Queue)> {
        self.inner.gpu.as_ref().map(Gpu::wgpu)
    }

    /// The time to move `bytes` from host memory into the GPU's memory the
    /// way batches are uploaded, at its best: copied on the engine's
    /// threads into mapped staging memory, then by the GPU into device
    /// memory (buffers created beforehand, untimed). The bound on any batch
    /// from host memory through this engine, to compare its end-to-end
    /// rate with. Copies at most the adapter's largest buffer.
    pub fn measure_gpu_bus(&self, bytes: &[u8]) -> Result<Duration, Error> {
        match &self.inner.gpu {
            Some(gpu) => gpu.bus_time(bytes, self.cpu_threads()),
            None => Err(ErrorKind::BackendUnavailable {
                backend: "gpu".to_owned(),
                reason: "this engine has no GPU".to_owned(),
            }
            .into()),
        }
    }

    /// A zeroed buffer of `len` bytes for batches, in pinned host memory of
    /// the engine's GPU, which copies records and packed blobs from there
    /// without packing them ([`PinnedBuffer`]); ordinary memory
    /// where the engine has no GPU or its GPU cannot pin memory for it.
    ///
    /// Fails with [`ErrorKind::OutOfMemory`] when it is more than the
    /// adapter's largest buffer, or more than ordinary memory can hold; with
    /// [`ErrorKind::Gpu`] when the GPU fails to allocate it.
    pub fn pinned_buffer(&self, len: usize) -> Result<PinnedBuffer, Error> {
        #[cfg(feature = "gpu")]
        if let Some(gpu) = &self.inner.gpu {
            if len > 0 {
                if let Some(memory) = gpu.pinned_memory(len, self.cpu_threads())? {
                    return Ok(PinnedBuffer::pinned(memory));
                }
            }
        }
        PinnedBuffer::heap(len)
    }

    /// How this engine's GPU receives blobs from host memory, and its
    /// shader's workgroup size; `None` when it has no GPU.
    pub fn gpu_settings(&self) -> Option<(GpuUpload, u32)> {
        self.inner.gpu.as_ref().map(Gpu::settings)
    }

    /// Hashes blobs that already live in GPU buffers of the engine's
    /// device, writing `blobs.count()` digests of 32 bytes into `digests`
    /// (created with `BufferUsages::STORAGE`) from byte `digests_offset`
    /// (a multiple of the device's `min_storage_buffer_offset_alignment`).
    /// Returns once the GPU has finished. Nothing crosses the bus but a
    /// few bytes of status: for GPU pipelines that produce the blobs and
    /// consume the digests on the card.
    ///
    /// Blobs of any length: one of at most 1 KiB is one invocation of the
    /// shader, one of a few chunks a tree hashed by one invocation, a
    /// longer one a tree hashed by a whole workgroup.
    ///
    /// Fails with [`ErrorKind::GpuBuffer`] (nothing written) when a buffer
    /// lacks `STORAGE` usage, is too small or over the device's limits, or
    /// when the offsets decrease or run past the data; with
    /// [`ErrorKind::BackendUnavailable`] when the engine has no GPU.
    #[cfg(feature = "gpu")]
    pub fn hash_gpu_blobs(
        &self,
        mode: Mode,
        blobs: GpuBlobs,
        digests: &wgpu::Buffer,
        digests_offset: u64,
    ) -> Result<(), Error> {
        let digests = gpu::Digests::Buffer {
            buffer: digests,
            offset: digests_offset,
        };
        self.hash_buffers(mode, blobs, digests)
    }

    /// [`hash_gpu_blobs`](Self::hash_gpu_blobs) with the digests read back
    /// into `out`, one slot per blob.
    #[cfg(feature = "gpu")]
    pub fn hash_gpu_blobs_into(
        &self,
        mode: Mode,
        blobs: GpuBlobs,
        out: &mut [[u8; 32]],
    ) -> Result<(), Error> {
        self.hash_buffers(mode, blobs, gpu::Digests::Host(out))
    }

    /// Records the hash of blobs that already live in GPU buffers, as
    /// [`hash_gpu_blobs`](Self::hash_gpu_blobs) does, into a command
    /// buffer for the caller to submit on the engine's queue
    /// ([`wgpu_device`](Self::wgpu_device)) with their own, so that a GPU
    /// pipeline runs many hashes without waiting on the host for each.
    /// [`PendingGpuHash::wait`](crate::PendingGpuHash::wait) then waits
    /// for it and reports offsets the GPU found bad;
    /// [`wait_for`](crate::PendingGpuHash::wait_for) waits for its own
    /// submission alone, not for those submitted after it.
    ///
    /// Each call reads its own parameters, so several may be recorded
    /// before any is submitted, in any order; the buffers must not change
    /// between submission and completion.
    ///
    /// ```no_run
    /// # fn run(engine: &blake3_batch::Engine, blobs: blake3_batch::GpuBlobs,
    /// #        digests: &blake3_batch::wgpu::Buffer) -> Result<(), blake3_batch::Error> {
    /// let (_, queue) = engine.wgpu_device().expect("a GPU engine");
    /// let (commands, pending) = engine.encode_gpu_blobs(blake3_batch::Mode::Hash, blobs, digests, 0)?;
    /// let submitted = queue.submit([commands]); // with the commands that make and use the blobs
    /// pending.wait_for(submitted)?;
    /// # Ok(()) }
    /// ```
    ///
    /// Fails at once, recording nothing, where
    /// [`hash_gpu_blobs`](Self::hash_gpu_blobs) would before running.
    #[cfg(feature = "gpu")]
    pub fn encode_gpu_blobs(
        &self,
        mode: Mode,
        blobs: GpuBlobs,
        digests: &wgpu::Buffer,
        digests_offset: u64,
    ) -> Result<(wgpu::CommandBuffer, crate::PendingGpuHash), Error> {
        let gpu = self.require_gpu()?;
        let words = self.mode_words(mode);
        let (commands, recorded) = gpu.encode_buffers(words, blobs, digests, digests_offset)?;
        Ok((commands, crate::PendingGpuHash::new(self.clone(), recorded)))
    }

    #[cfg(feature = "gpu")]
    fn hash_buffers(
        &self,
        mode: Mode,
        blobs: GpuBlobs,
        digests: gpu::Digests,
    ) -> Result<(), Error> {
        let words = self.mode_words(mode);
        self.require_gpu()?.hash_buffers(words, blobs, digests)
    }

    /// The GPU, or the error for an engine without one.
    fn require_gpu(&self) -> Result<&Gpu, Error> {
        self.inner.gpu.as_ref().ok_or_else(|| {
            ErrorKind::BackendUnavailable {
                backend: "gpu".to_owned(),
                reason: "this engine has no GPU: build it with Backend::Gpu or \
                         EngineBuilder::wgpu_device"
                    .to_owned(),
            }
            .into()
        })
    }

    /// The key words and flags of `mode` for the shaders.
    fn mode_words(&self, mode: Mode) -> crate::mode::ModeWords {
        let kernel = self.inner.kernel;
        mode.words(|context| hash_one(kernel, Mode::CONTEXT, context))
    }

    /// Whether a batch of `count` blobs runs on the CPU alone: always
    /// without a GPU or with [`Backend::Cpu`], else as Auto chooses.
    fn runs_on_cpu_alone(
        &self,
        count: usize,
        bytes: Option<u64>,
        shape: impl FnOnce() -> BatchShape,
        in_place: bool,
    ) -> bool {
        match (&self.inner.gpu, self.inner.backend) {
            (None, _) | (_, Backend::Cpu) => true,
            (Some(_), Backend::Gpu) => false,
            (Some(_), Backend::Auto) => {
                self.auto_choice(count, bytes, shape, in_place) == Choice::Cpu
            }
        }
    }

    /// Whether packed blobs may be copied by the GPU from a pinned buffer
    /// where they lie, judged before the offsets are checked: the bytes
    /// from the first offset to the last lie in one (the plan that follows
    /// checks the offsets).
    pub(crate) fn may_copy_in_place<O: Offset>(&self, data: &[u8], offsets: &[O]) -> bool {
        let (Some(gpu), [first, .., last]) = (&self.inner.gpu, offsets) else {
            return false;
        };
        let bytes = usize::try_from(first.to_u64())
            .ok()
            .zip(usize::try_from(last.to_u64()).ok())
            .and_then(|(first, last)| data.get(first..last));
        bytes.is_some_and(|bytes| gpu.copies_in_place_from(bytes))
    }

    /// Where Auto runs a batch of `count` blobs: the fixed share if one was
    /// set, else the CPU where it surely wins on the batch's `bytes` (where
    /// they are known without a pass over the blobs), else the plan for the
    /// batch's `shape`, which the GPU copies from a pinned buffer where it
    /// lies if `in_place`.
    fn auto_choice(
        &self,
        count: usize,
        bytes: Option<u64>,
        shape: impl FnOnce() -> BatchShape,
        in_place: bool,
    ) -> Choice {
        let (profile, threads) = (&self.inner.profile, self.inner.threads);
        match (self.inner.gpu_share, bytes) {
            (Some(share), _) => scheduler::share_choice(share, count, || {
                scheduler::split_at_share(&shape(), profile, threads, in_place, share)
                    .packing_threads
            }),
            (None, Some(bytes)) if scheduler::cpu_surely_faster(count, bytes, profile, threads) => {
                Choice::Cpu
            }
            (None, _) => scheduler::plan_for(&shape(), profile, threads, in_place).choice,
        }
    }

    /// The batch's shape for the planner: at once for blobs of one length
    /// back to back, from a sample where the total is known, else from
    /// every length up to [`EXACT_SHAPE_MAX`] blobs and from a sample
    /// beyond.
    fn shape_of<S: BlobSource>(&self, source: &S) -> BatchShape {
        let count = source.count();
        if let Some((_, len)) = source.back_to_back(0, count) {
            return BatchShape::from_lengths(std::iter::once(len)).times(count);
        }
        if !S::CONTIGUOUS && count <= EXACT_SHAPE_MAX {
            return BatchShape::from_lengths((0..count).map(|index| source.len(index)));
        }
        let total = S::CONTIGUOUS.then(|| source.bytes(0, count) as u64);
        BatchShape::sampled(count, total, SHAPE_SAMPLES, |index| {
            source.len(index) as u64
        })
    }

    fn run_cpu<S: BlobSource>(&self, mode: Mode, source: &S, out: &mut [[u8; 32]]) {
        hash_source(self.inner.kernel, self.cpu_threads(), mode, source, out);
    }

    /// The GPU, when the engine has one (for calibration, pending hashes).
    pub(crate) fn gpu(&self) -> Option<&Gpu> {
        self.inner.gpu.as_ref()
    }

    /// Hashes packed blobs on the GPU whatever the backend (calibration).
    pub(crate) fn hash_packed_on_gpu(
        &self,
        data: &[u8],
        offsets: &[u64],
        out: &mut [[u8; 32]],
        one_thread: bool,
    ) -> Result<(), Error> {
        let source = self.checked_packed(data, offsets)?;
        check_output(source.count(), out)?;
        let gpu = self.require_gpu()?;
        let threads = match one_thread {
            true => Threads::One,
            false => self.cpu_threads(),
        };
        self.run_gpu(gpu, Mode::Hash, &source, out, LongBlobs::OnGpu, threads)
    }

    /// Hashes packed blobs split as `share` of them on the GPU and the
    /// rest on the CPU, whatever the backend (calibration).
    pub(crate) fn hash_packed_split(
        &self,
        data: &[u8],
        offsets: &[u64],
        out: &mut [[u8; 32]],
        (share, packing_threads): (f64, usize),
    ) -> Result<(), Error> {
        // Checked as Auto checks the batches it splits: calibration times
        // this against the model. With the offsets checked on one thread,
        // an H200 host's splits of 4 Mi 64-byte blobs took 2.1 and 3.0×
        // the model's time (from ordinary and pinned memory), checked on
        // every thread 1.3 and 1.3×.
        let source = self.checked_packed(data, offsets)?;
        check_output(source.count(), out)?;
        let gpu = self.require_gpu()?;
        let in_place = gpu.copies_in_place(&source);
        let choice = scheduler::share_choice(share, source.count(), || packing_threads);
        self.run_choice(gpu, Mode::Hash, &source, out, choice, in_place);
        Ok(())
    }

    pub(crate) fn cpu_threads(&self) -> Threads<'_> {
        match (&self.inner.pool, self.inner.threads) {
            (Some(pool), _) => Threads::Pool(pool),
            (None, 1) => Threads::One,
            (None, _) => Threads::Global,
        }
    }

    /// Runs a batch on the GPU, with the blobs it leaves (see [`LongBlobs`])
    /// hashed on the CPU at the same time into a side buffer, then put in
    /// their slots.
    fn run_gpu<S: BlobSource>(
        &self,
        gpu: &Gpu,
        mode: Mode,
        source: &S,
        out: &mut [[u8; 32]],
        long: LongBlobs,
        threads: Threads<'_>,
    ) -> Result<(), Error> {
        let kernel = self.inner.kernel;
        let (mut large, on_gpu) = GpuWork::plan(gpu, source, long);
        let on_gpu = |out: &mut [[u8; 32]]| on_gpu.hash(self, gpu, mode, source, out, threads);
        if large.count() == 0 {
            return on_gpu(out);
        }
        // The long blobs leave a thread to pack for the GPU: on all of
        // them, the pool's workers would take the long blobs' jobs first
        // and run each to the end, and the packing would wait for that.
        let long_threads = match threads {
            Threads::One => Threads::One,
            _ => threads.part(self.inner.threads.saturating_sub(1)),
        };
        let gpu_result = std::thread::scope(|scope| {
            scope.spawn(|| large.hash(kernel, long_threads, mode, source));
            on_gpu(&mut *out)
        });
        large.put_into(out);
        gpu_result
    }

    /// The engine behind the crate's free functions: automatic backend, every
    /// core, `B3BATCH_CPU` honoured when it names a backend this CPU has.
    pub(crate) fn shared() -> &'static Engine {
        static SHARED: OnceLock<Engine> = OnceLock::new();
        SHARED.get_or_init(|| {
            // With default settings only `B3BATCH_CPU` can make building
            // fail. The free functions cannot return that error; say it
            // once rather than ignore the variable silently.
            Engine::builder().build().unwrap_or_else(|error| {
                // Not `eprintln!`, which panics where stderr is closed.
                let _ = writeln!(
                    std::io::stderr(),
                    "blake3-batch: ignoring {error}; using the detected CPU backend"
                );
                Engine::from_parts(
                    Backend::Auto,
                    Kernel::detect(),
                    rayon::current_num_threads(),
                    None,
                )
            })
        })
    }
}

/// Where a GPU batch's blobs over one chunk go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LongBlobs {
    /// Onto the GPU too, as trees, those longer than a slab in subtrees:
    /// `Backend::Gpu` asked for the card.
    OnGpu,
    /// Onto the CPU beside the GPU, as `Auto`'s plans assume where its
    /// profile has no GPU rate for them.
    OnCpu,
}

/// What a GPU batch hashes on the GPU: its blobs of at most `max_blob`
/// bytes through the slabs, then those `subtrees` lists in subtrees.
struct GpuWork {
    max_blob: usize,
    /// The blobs over `max_blob`: those in subtrees and the CPU's.
    longer: usize,
    subtrees: Vec<usize>,
}

impl GpuWork {
    /// The blobs of `source` the GPU takes as `long` says, and those it
    /// leaves to the CPU.
    fn plan<S: BlobSource>(gpu: &Gpu, source: &S, long: LongBlobs) -> (SetAside, GpuWork) {
        let max_blob = match long {
            LongBlobs::OnGpu => gpu.max_blob(),
            LongBlobs::OnCpu => CHUNK_LEN,
        };
        let mut large = SetAside::over(source, max_blob);
        // Blobs longer than a slab go to the GPU too, in subtrees that fit
        // one, after the rest.
        let subtrees = match long {
            LongBlobs::OnGpu => large.take(|index| gpu.takes_as_subtrees(source.len(index))),
            LongBlobs::OnCpu => Vec::new(),
        };
        let longer = large.count() + subtrees.len();
        let on_gpu = GpuWork {
            max_blob,
            longer,
            subtrees,
        };
        (large, on_gpu)
    }

    /// Hashes them into their slots of `out`, packing on `threads`; the
    /// slots of the blobs left to the CPU stay as they are.
    fn hash<S: BlobSource>(
        &self,
        engine: &Engine,
        gpu: &Gpu,
        mode: Mode,
        source: &S,
        out: &mut [[u8; 32]],
        threads: Threads,
    ) -> Result<(), Error> {
        let words = engine.mode_words(mode);
        gpu.hash(words, source, self.max_blob, out, self.longer, threads)?;
        match self.subtrees.is_empty() {
            true => Ok(()),
            false => gpu.hash_as_subtrees((mode, words), source, &self.subtrees, out, threads),
        }
    }
}

/// The blobs of a GPU batch over the longest it takes, hashed on the CPU
/// beside it and put in their slots after.
struct SetAside {
    indices: Vec<usize>,
    digests: Vec<[u8; 32]>,
}

impl SetAside {
    /// The blobs of `source` over `max_blob` bytes (blobs of one length
    /// need no pass over every length).
    fn over<S: BlobSource>(source: &S, max_blob: usize) -> SetAside {
        let indices: Vec<usize> = match source.back_to_back(0, source.count()) {
            Some((_, len)) if len <= max_blob => Vec::new(),
            _ => (0..source.count())
                .filter(|&index| source.len(index) > max_blob)
                .collect(),
        };
        let digests = vec![[0u8; 32]; indices.len()];
        SetAside { indices, digests }
    }

    fn count(&self) -> usize {
        self.indices.len()
    }

    /// Takes the blobs `taken(index)` says back from the set, in order.
    fn take(&mut self, mut taken: impl FnMut(usize) -> bool) -> Vec<usize> {
        let (taken, kept) = self.indices.iter().partition(|&&index| taken(index));
        self.indices = kept;
        self.digests.truncate(self.indices.len());
        taken
    }

    /// Hashes them, from `source`, on `threads`.
    fn hash<S: BlobSource>(&mut self, kernel: Kernel, threads: Threads, mode: Mode, source: &S) {
        let subset = Subset {
            source,
            indices: &self.indices,
        };
        hash_source(kernel, threads, mode, &subset, &mut self.digests);
    }

    /// Puts their digests in their slots of `out`.
    fn put_into(&self, out: &mut [[u8; 32]]) {
        for (&index, digest) in self.indices.iter().zip(&self.digests) {
            out[index] = *digest;
        }
    }
}

/// The shape of packed blobs whose offsets are not checked yet, from a
/// sample of them when there are many: an estimate (offsets that decrease
/// count as empty blobs) that only steers the plan.
fn packed_shape<O: Offset>(offsets: &[O]) -> BatchShape {
    let count = offsets.len().saturating_sub(1);
    let len = |index: usize| {
        offsets[index + 1]
            .to_u64()
            .saturating_sub(offsets[index].to_u64())
    };
    BatchShape::sampled(count, Some(packed_bytes(offsets)), SHAPE_SAMPLES, len)
}

/// The bytes packed blobs span by their first and last offsets, which
/// are not checked yet: an estimate that only steers the plan.
fn packed_bytes<O: Offset>(offsets: &[O]) -> u64 {
    match offsets {
        [first, .., last] => last.to_u64().saturating_sub(first.to_u64()),
        _ => 0,
    }
}

fn into_hashes(digests: Vec<[u8; 32]>) -> Vec<Hash> {
    digests.into_iter().map(Hash::from).collect()
}

impl fmt::Debug for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Engine")
            .field("backend", &self.inner.backend)
            .field("cpu_backend", &self.cpu_backend())
            .field("lanes", &self.lanes())
            .field("threads", &self.inner.threads)
            .finish()
    }
}
