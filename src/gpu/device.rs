//! Acquiring the adapter, device and pipeline once, and turning everything
//! `wgpu` can report (no adapter, validation errors, a lost device, a failed
//! map, a timeout) into the crate's [`Error`] instead of a panic or a hang.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::info::GpuInfo;
use super::layout::SHADER;
use crate::error::{Error, ErrorKind};

/// Features that let the engine time upload, dispatch and download on the
/// GPU itself; used when the adapter has them.
pub(crate) const TIMESTAMP_FEATURES: wgpu::Features =
    wgpu::Features::TIMESTAMP_QUERY.union(wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS);

/// The longest the engine waits for one slab before giving up with an error.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// An opened GPU: device, queue, the compiled pipeline and the error sink.
pub(crate) struct GpuDevice {
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    pub pipeline: wgpu::ComputePipeline,
    pub bind_layout: wgpu::BindGroupLayout,
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
    pub(crate) fn open() -> Result<GpuDevice, Error> {
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
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("blake3-batch"),
            required_features: if timestamps {
                TIMESTAMP_FEATURES
            } else {
                wgpu::Features::empty()
            },
            required_limits: limits.clone(),
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
            record(&sink, format!("device lost ({reason:?}): {message}"));
        });

        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("blake3.wgsl"),
            source: wgpu::ShaderSource::Wgsl(SHADER.into()),
        });
        let bind_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("blake3-batch bindings"),
            entries: &[
                layout_entry(0, wgpu::BufferBindingType::Uniform),
                layout_entry(1, wgpu::BufferBindingType::Storage { read_only: true }),
                layout_entry(2, wgpu::BufferBindingType::Storage { read_only: true }),
                layout_entry(3, wgpu::BufferBindingType::Storage { read_only: false }),
            ],
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("blake3-batch layout"),
            bind_group_layouts: &[Some(&bind_layout)],
            immediate_size: 0,
        });
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some("blake3-batch"),
            layout: Some(&pipeline_layout),
            module: &module,
            entry_point: Some("main"),
            compilation_options: Default::default(),
            cache: None,
        });
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
            pipeline,
            bind_layout,
            info,
            limits,
            timestamp_period,
            faults,
        })
    }

    /// Fails with the first error `wgpu` reported since the last check.
    pub(crate) fn check_faults(&self) -> Result<(), Error> {
        let mut faults = self
            .faults
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        match faults.first() {
            None => Ok(()),
            Some(first) => {
                let error = gpu_failed("hashing", first.clone());
                faults.clear();
                Err(error)
            }
        }
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
            Err(wgpu::PollError::Timeout) => Err(gpu_failed(
                "waiting for a slab",
                format!(
                    "the GPU did not finish within {timeout:?}; give it more time with \
                     EngineBuilder::gpu_timeout or use Backend::Cpu"
                ),
            )),
            Err(error) => Err(gpu_failed("waiting for a slab", error.to_string())),
        }
    }

    /// Makes every later use of this device fail (for tests of device loss).
    #[cfg(test)]
    pub(crate) fn destroy(&self) {
        self.device.destroy();
    }
}

fn record(faults: &Mutex<Vec<String>>, message: String) {
    faults
        .lock()
        .unwrap_or_else(|poison| poison.into_inner())
        .push(message);
}

/// A GPU operation failed after the device was opened.
pub(crate) fn gpu_failed(operation: &str, reason: String) -> Error {
    ErrorKind::Gpu {
        operation: operation.to_owned(),
        reason,
    }
    .into()
}

fn layout_entry(binding: u32, ty: wgpu::BufferBindingType) -> wgpu::BindGroupLayoutEntry {
    wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer {
            ty,
            has_dynamic_offset: false,
            min_binding_size: None,
        },
        count: None,
    }
}
