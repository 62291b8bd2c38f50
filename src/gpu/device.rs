//! Acquiring the adapter, device and pipeline once, and turning everything
//! `wgpu` can report (no adapter, validation errors, a lost device, a failed
//! map, a timeout) into the crate's [`Error`] instead of a panic or a hang.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::info::GpuInfo;
use super::layout::{
    buffer_shader, slab_shader, CHECK_PACKED_ENTRY, DEFAULT_WORKGROUP_SIZE,
    HASH_BUFFER_RECORDS_ENTRY, HASH_PACKED_ENTRY, HASH_TREES_ENTRY, JOIN_PIECES_ENTRY,
    SLAB_ENTRIES,
};
use super::settings::{DeviceSettings, GpuUpload};
use crate::error::{Error, ErrorKind};

/// Features that let the engine time upload, dispatch and download on the
/// GPU itself; used when the adapter has them.
pub(crate) const TIMESTAMP_FEATURES: wgpu::Features =
    wgpu::Features::TIMESTAMP_QUERY.union(wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS);

/// The environment variable that chooses the upload (`copy`, `direct` or
/// `host`) where the adapter allows it; `copy` by default.
pub(crate) const UPLOAD_ENV: &str = "B3BATCH_GPU_UPLOAD";

/// The environment variable that sets the shader's workgroup size (a power
/// of two from 32 to 1024, within the adapter's limits).
pub(crate) const WORKGROUP_ENV: &str = "B3BATCH_GPU_WORKGROUP";

/// The pipelines of `shaders/buffers.wgsl` and their bindings.
pub(crate) struct BufferPipelines {
    pub layout: wgpu::BindGroupLayout,
    pub check_packed: wgpu::ComputePipeline,
    pub hash_packed: wgpu::ComputePipeline,
    pub hash_records: wgpu::ComputePipeline,
    /// `hash_trees`: blobs over one chunk, an invocation each for a few
    /// chunks, a workgroup each for more.
    pub hash_trees: wgpu::ComputePipeline,
    /// `join_pieces`: the roots of blobs that `hash_trees` hashed in
    /// pieces.
    pub join_pieces: wgpu::ComputePipeline,
}

/// An opened GPU: device, queue, the compiled pipelines and the error sink.
pub(crate) struct GpuDevice {
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    /// `hash_table`: blobs of any lengths through a table.
    pub table_pipeline: wgpu::ComputePipeline,
    /// `hash_records`: blobs of one length at a fixed stride.
    pub records_pipeline: wgpu::ComputePipeline,
    /// `hash_verbatim`: blobs as they lay in packed input, through a table;
    /// `hash_verbatim_records`: of one length, back to back.
    pub verbatim_pipeline: wgpu::ComputePipeline,
    pub verbatim_records_pipeline: wgpu::ComputePipeline,
    /// `hash_chunks` (or `hash_verbatim_chunks`) and `hash_parents`: blobs
    /// over one chunk, as trees.
    pub chunks_pipeline: wgpu::ComputePipeline,
    pub verbatim_chunks_pipeline: wgpu::ComputePipeline,
    pub parents_pipeline: wgpu::ComputePipeline,
    pub bind_layout: wgpu::BindGroupLayout,
    /// The pipelines over the caller's buffers.
    pub buffers: BufferPipelines,
    /// Invocations per workgroup of every pipeline.
    pub workgroup_size: u32,
    pub upload: GpuUpload,
    pub info: GpuInfo,
    /// The limits the device was created with (the adapter's own).
    pub limits: wgpu::Limits,
    /// Nanoseconds per timestamp tick, when timestamps are enabled.
    pub timestamp_period: Option<f32>,
    /// Errors `wgpu` reported outside an error scope, and device loss:
    /// recorded here rather than panicking, and checked after every wait.
    faults: Arc<Mutex<Vec<String>>>,
}

/// A `wgpu` instance on `backends`, with wgpu's environment variables
/// honoured (`WGPU_BACKEND` replaces `backends`).
fn instance(backends: wgpu::Backends) -> wgpu::Instance {
    let mut descriptor = wgpu::InstanceDescriptor::new_without_display_handle();
    descriptor.backends = backends;
    wgpu::Instance::new(descriptor.with_env())
}

/// The APIs to try, in order: the primary ones (Vulkan, Metal, DX12) and
/// then GL, which is only asked when nothing else answers because probing
/// it prints display-server noise on headless machines. `WGPU_BACKEND`
/// replaces the list.
fn backend_order() -> Vec<wgpu::Backends> {
    if std::env::var_os("WGPU_BACKEND").is_some() {
        vec![wgpu::Backends::all()]
    } else {
        vec![wgpu::Backends::PRIMARY, wgpu::Backends::SECONDARY]
    }
}

/// What the instance looked for, for error messages.
fn searched() -> String {
    match std::env::var("WGPU_BACKEND") {
        Ok(value) => format!("WGPU_BACKEND={value}"),
        Err(_) => "Vulkan, Metal, DX12, then GL (set WGPU_BACKEND to choose)".to_owned(),
    }
}

fn unavailable(reason: String) -> Error {
    ErrorKind::BackendUnavailable {
        backend: "gpu".to_owned(),
        reason,
    }
    .into()
}

/// Every adapter the instance can see, for reports.
pub(crate) fn adapters() -> Vec<GpuInfo> {
    for backends in backend_order() {
        let instance = instance(backends);
        let adapters = pollster::block_on(instance.enumerate_adapters(backends.with_env()));
        if !adapters.is_empty() {
            return adapters.iter().map(GpuInfo::from_adapter).collect();
        }
    }
    Vec::new()
}

impl GpuDevice {
    /// Opens the preferred adapter (a high-performance one first) with its
    /// full limits and compiles the shader.
    pub(crate) fn open(settings: DeviceSettings) -> Result<GpuDevice, Error> {
        let request = |backends| {
            pollster::block_on(
                instance(backends).request_adapter(&wgpu::RequestAdapterOptions {
                    power_preference: wgpu::PowerPreference::HighPerformance,
                    ..Default::default()
                }),
            )
        };
        let mut order = backend_order().into_iter();
        let mut found = request(order.next().unwrap_or(wgpu::Backends::all()));
        for backends in order {
            if found.is_ok() {
                break;
            }
            found = request(backends);
        }
        let adapter = found.map_err(|error| {
            unavailable(format!(
                "no GPU adapter found ({error}); searched {}. Install a GPU driver \
                 (on Debian, `apt-get install mesa-vulkan-drivers` gives the lavapipe \
                 software adapter) or use Backend::Cpu",
                searched()
            ))
        })?;
        let info = GpuInfo::from_adapter(&adapter);
        // Without asking for the adapter's limits, storage bindings stop at
        // wgpu's portable default of 128 MiB.
        let limits = adapter.limits();
        let timestamps = adapter.features().contains(TIMESTAMP_FEATURES);
        let upload = upload(settings.upload, adapter.features(), &info)?;
        let mut features = wgpu::Features::empty();
        if timestamps {
            features |= TIMESTAMP_FEATURES;
        }
        if upload == GpuUpload::Direct {
            features |= wgpu::Features::MAPPABLE_PRIMARY_BUFFERS;
        }
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("blake3-batch"),
            required_features: features,
            required_limits: limits,
            ..Default::default()
        }))
        .map_err(|error| unavailable(format!("adapter {} refused a device: {error}", info.name)))?;
        let faults = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&faults);
        device.on_uncaptured_error(Arc::new(move |error: wgpu::Error| {
            record(&sink, format!("wgpu error: {error}"));
        }));
        let sink = Arc::clone(&faults);
        device.set_device_lost_callback(move |reason, message| {
            record(&sink, format!("{DEVICE_LOST} ({reason:?}): {message}"));
        });
        GpuDevice::prepare(device, queue, info, settings, faults)
    }

    /// Works on the caller's device and queue, with the features and
    /// limits they were created with. The caller's error handler and
    /// device-lost callback stay theirs: the engine captures errors of its
    /// own calls in error scopes and learns of a lost device from its waits.
    pub(crate) fn adopt(
        device: wgpu::Device,
        queue: wgpu::Queue,
        settings: DeviceSettings,
    ) -> Result<GpuDevice, Error> {
        let info = GpuInfo::from_device(&device);
        GpuDevice::prepare(device, queue, info, settings, Arc::default())
    }

    /// Compiles the pipelines on an open device.
    fn prepare(
        device: wgpu::Device,
        queue: wgpu::Queue,
        info: GpuInfo,
        settings: DeviceSettings,
        faults: Arc<Mutex<Vec<String>>>,
    ) -> Result<GpuDevice, Error> {
        let limits = device.limits();
        let workgroup_size = workgroup_size(settings.workgroup_size, &limits)?;
        let upload = upload(settings.upload, device.features(), &info)?;
        let timestamps = device.features().contains(TIMESTAMP_FEATURES);
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let storage = |read_only| wgpu::BufferBindingType::Storage { read_only };
        // The slab's parameters are a storage buffer, not a uniform: Mesa's
        // lavapipe compiles a shader variant for the values of uniforms that
        // steer loops (the records' length), which cost every slab of
        // records 4 to 10 ms there. Each binding: its type, and whether it
        // takes a dynamic offset.
        let read = (storage(true), false);
        let write = (storage(false), false);
        // The slab's bindings (`shaders/slabs.wgsl`); the last, the level of
        // a long blob's tree one dispatch works on, moves per dispatch.
        let bind_layout = layout_of(
            &device,
            &[read, read, read, write, read, write, (storage(true), true)],
        );
        let buffer_layout = layout_of(&device, &[read, read, read, write, write, write, write]);
        let constants = [("workgroup_size", f64::from(workgroup_size))];
        let pipelines = |source: String, layout: &wgpu::BindGroupLayout, entries: &[&str]| {
            let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some("blake3-batch"),
                source: wgpu::ShaderSource::Wgsl(source.into()),
            });
            let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: Some("blake3-batch layout"),
                bind_group_layouts: &[Some(layout)],
                immediate_size: 0,
            });
            entries
                .iter()
                .map(|entry_point| {
                    device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                        label: Some(entry_point),
                        layout: Some(&pipeline_layout),
                        module: &module,
                        entry_point: Some(entry_point),
                        compilation_options: wgpu::PipelineCompilationOptions {
                            constants: &constants,
                            // Each shader writes its workgroup memory before
                            // reading it (buffers.wgsl zeroes its counters
                            // itself): zeroing the 4 KiB `hash_packed` sorts
                            // in at every workgroup's start is work for
                            // nothing.
                            zero_initialize_workgroup_memory: false,
                        },
                        cache: None,
                    })
                })
                .collect::<Vec<_>>()
        };
        // In `SLAB_ENTRIES`' order.
        let slab_pipelines: [_; 7] = pipelines(slab_shader(), &bind_layout, &SLAB_ENTRIES)
            .try_into()
            .unwrap_or_else(|_| unreachable!("seven entries, seven pipelines"));
        let [table_pipeline, records_pipeline, verbatim_pipeline, verbatim_records_pipeline, chunks_pipeline, verbatim_chunks_pipeline, parents_pipeline] =
            slab_pipelines;
        let [check_packed, hash_packed, hash_records, hash_trees, join_pieces] = pipelines(
            buffer_shader(),
            &buffer_layout,
            &[
                CHECK_PACKED_ENTRY,
                HASH_PACKED_ENTRY,
                HASH_BUFFER_RECORDS_ENTRY,
                HASH_TREES_ENTRY,
                JOIN_PIECES_ENTRY,
            ],
        )
        .try_into()
        .unwrap_or_else(|_| unreachable!("five entries, five pipelines"));
        if let Some(error) = pollster::block_on(scope.pop()) {
            return Err(unavailable(format!(
                "the BLAKE3 shader did not compile on {}: {error}",
                info.name
            )));
        }
        let timestamp_period = timestamps.then(|| queue.get_timestamp_period());
        Ok(GpuDevice {
            device,
            queue,
            table_pipeline,
            records_pipeline,
            verbatim_pipeline,
            verbatim_records_pipeline,
            chunks_pipeline,
            verbatim_chunks_pipeline,
            parents_pipeline,
            bind_layout,
            buffers: BufferPipelines {
                layout: buffer_layout,
                check_packed,
                hash_packed,
                hash_records,
                hash_trees,
                join_pieces,
            },
            workgroup_size,
            upload,
            info,
            limits,
            timestamp_period,
            faults,
        })
    }

    /// Fails with the first error `wgpu` reported since the last check, or,
    /// once the device is lost, with that loss at every check from then on.
    pub(crate) fn check_faults(&self) -> Result<(), Error> {
        let mut faults = self
            .faults
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        let lost = |message: &String| message.starts_with(DEVICE_LOST);
        let chosen = faults
            .iter()
            .find(|message| lost(message))
            .or(faults.first());
        match chosen.cloned() {
            None => Ok(()),
            Some(message) => {
                faults.retain(lost);
                Err(gpu_failed("hashing", message))
            }
        }
    }

    /// Waits (at most `timeout`) for all submitted work, so that buffers
    /// dropped after a failed batch are freed; errors are already reported.
    pub(crate) fn settle(&self, timeout: Duration) {
        let _ = self.device.poll(wgpu::PollType::Wait {
            submission_index: None,
            timeout: Some(timeout),
        });
    }

    /// Waits (at most `timeout`) until `submission` has finished and its map
    /// callbacks have run.
    pub(crate) fn wait(
        &self,
        submission: wgpu::SubmissionIndex,
        timeout: Duration,
    ) -> Result<(), Error> {
        let polled = self.device.poll(wgpu::PollType::Wait {
            submission_index: Some(submission),
            timeout: Some(timeout),
        });
        self.check_faults()?;
        match polled {
            Ok(_) => Ok(()),
            Err(wgpu::PollError::Timeout) => Err(timed_out(timeout)),
            Err(error) => Err(gpu_failed("waiting for a slab", error.to_string())),
        }
    }

    /// Makes every later use of this device fail (for tests of device loss).
    pub(crate) fn destroy(&self) {
        self.device.destroy();
    }

    /// Submits a copy from a buffer onto itself, which `wgpu` rejects: a
    /// real validation error, for the fault tests.
    pub(crate) fn submit_invalid_command(&self) {
        let buffer = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("injected fault"),
            size: 16,
            usage: wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder = self.device.create_command_encoder(&Default::default());
        encoder.copy_buffer_to_buffer(&buffer, 0, &buffer, 0, 16);
        self.queue.submit([encoder.finish()]);
    }
}

/// The workgroup size the builder or `B3BATCH_GPU_WORKGROUP` asks for, or
/// the default; an error if the adapter cannot run it.
fn workgroup_size(asked: Option<u32>, limits: &wgpu::Limits) -> Result<u32, Error> {
    let (size, from) = match (asked, std::env::var(WORKGROUP_ENV)) {
        (Some(size), _) => (Some(size), "EngineBuilder::gpu_workgroup_size".to_owned()),
        (None, Ok(value)) => (
            value.trim().parse().ok(),
            format!("{WORKGROUP_ENV}={value}"),
        ),
        (None, Err(_)) => return Ok(DEFAULT_WORKGROUP_SIZE),
    };
    let most = limits
        .max_compute_workgroup_size_x
        .min(limits.max_compute_invocations_per_workgroup);
    match size {
        Some(size) if size.is_power_of_two() && (32..=most).contains(&size) => Ok(size),
        _ => Err(unavailable(format!(
            "{from}: the workgroup size must be a power of two from 32 to {most} \
             (this adapter's largest)"
        ))),
    }
}

/// The upload the builder or `B3BATCH_GPU_UPLOAD` asks for, or
/// [`GpuUpload::Copy`]; an error if the adapter cannot do it.
fn upload(
    asked: Option<GpuUpload>,
    features: wgpu::Features,
    info: &GpuInfo,
) -> Result<GpuUpload, Error> {
    let (upload, from) = match (asked, std::env::var(UPLOAD_ENV)) {
        (Some(upload), _) => (upload, "EngineBuilder::gpu_upload".to_owned()),
        (None, Ok(value)) => match value.trim() {
            "copy" => (GpuUpload::Copy, String::new()),
            "direct" => (GpuUpload::Direct, format!("{UPLOAD_ENV}={value}")),
            "host" => (GpuUpload::Host, format!("{UPLOAD_ENV}={value}")),
            other => {
                return Err(unavailable(format!(
                    "{UPLOAD_ENV}={other} names no upload; use copy, direct or host"
                )))
            }
        },
        (None, Err(_)) => return Ok(GpuUpload::Copy),
    };
    if upload == GpuUpload::Direct && !features.contains(wgpu::Features::MAPPABLE_PRIMARY_BUFFERS) {
        return Err(unavailable(format!(
            "{from} asks for the direct upload, but this adapter cannot map storage \
             buffers (MAPPABLE_PRIMARY_BUFFERS); use GpuUpload::Copy"
        )));
    }
    if upload == GpuUpload::Host && info.api != "Vulkan" {
        return Err(unavailable(format!(
            "{from} asks for the host upload, which needs the Vulkan backend, but the \
             adapter runs on {}; use GpuUpload::Copy or WGPU_BACKEND=vulkan",
            info.api
        )));
    }
    Ok(upload)
}

fn record(faults: &Mutex<Vec<String>>, message: String) {
    faults
        .lock()
        .unwrap_or_else(|poison| poison.into_inner())
        .push(message);
}

/// A GPU operation failed after the device was opened.
/// How a lost device's message starts.
const DEVICE_LOST: &str = "device lost";

/// The error of a slab that did not finish within `timeout`.
pub(crate) fn timed_out(timeout: Duration) -> Error {
    gpu_failed(
        "waiting for a slab",
        format!(
            "the GPU did not finish within {timeout:?}; give it more time with \
             EngineBuilder::gpu_timeout or use Backend::Cpu"
        ),
    )
}

pub(crate) fn gpu_failed(operation: &str, reason: String) -> Error {
    ErrorKind::Gpu {
        operation: operation.to_owned(),
        reason,
    }
    .into()
}

/// A layout of buffer bindings `0..types.len()` for compute, each a type
/// and whether it takes a dynamic offset.
fn layout_of(
    device: &wgpu::Device,
    types: &[(wgpu::BufferBindingType, bool)],
) -> wgpu::BindGroupLayout {
    let entries: Vec<_> = (0..)
        .zip(types)
        .map(|(binding, &(ty, dynamic))| wgpu::BindGroupLayoutEntry {
            binding,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty,
                has_dynamic_offset: dynamic,
                min_binding_size: None,
            },
            count: None,
        })
        .collect();
    device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some("blake3-batch bindings"),
        entries: &entries,
    })
}
