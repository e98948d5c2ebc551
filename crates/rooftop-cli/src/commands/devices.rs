//! `rooftop devices [NAME]`: the catalog, or one device with every figure's source.

use super::find_device;
use crate::args::DevicesArgs;
use crate::error::{CliError, Result};
use rooftop_core::device::{Catalog, DeviceSpec, Vendor};
use rooftop_report::Format;

pub fn run(catalog: &Catalog, args: &DevicesArgs, fmt: Format) -> Result<String> {
    if fmt == Format::Perfetto {
        return Err(crate::output::no_perfetto("devices"));
    }
    if let Some(name) = &args.name {
        let d = find_device(catalog, name)?;
        return Ok(rooftop_report::device_detail(fmt, d));
    }
    let vendor = match args.vendor.as_deref() {
        None => None,
        Some(v) => Some(parse_vendor(v)?),
    };
    let list: Vec<DeviceSpec> =
        catalog.devices.iter().filter(|d| vendor.is_none_or(|v| d.vendor == v)).cloned().collect();
    Ok(rooftop_report::device_list(fmt, &list))
}

fn parse_vendor(v: &str) -> Result<Vendor> {
    match v.to_ascii_lowercase().as_str() {
        "nvidia" => Ok(Vendor::Nvidia),
        "amd" => Ok(Vendor::Amd),
        "apple" => Ok(Vendor::Apple),
        "intel" => Ok(Vendor::Intel),
        "cpu" => Ok(Vendor::Cpu),
        _ => Err(CliError::input(format!(
            "unknown vendor `{v}` for --vendor: expected nvidia, amd, apple, intel or cpu"
        ))),
    }
}
