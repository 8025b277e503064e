//! Any payload given to every typed event view, at either pointer size and any version: a view
//! or an error, never a panic; bulk iterators stop within the payload.
#![no_main]
use clr_events::{clrspy, heapdump, runtime};
use libfuzzer_sys::fuzz_target;

fn drain<T>(it: impl Iterator<Item = Result<T, clr_events::ViewError>>, limit: usize) {
    let mut n = 0usize;
    for item in it {
        n += 1;
        assert!(n <= limit + 1, "a bulk iterator ran past its payload");
        if item.is_err() {
            break;
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&first, p)) = data.split_first() else {
        return;
    };
    let version = first & 0x0f;
    let ptr = if first & 0x10 == 0 { 8 } else { 4 };

    let _ = runtime::MethodLoad::parse(p, version, ptr);
    let _ = runtime::R2rEntryPoint::parse(p, version, ptr);
    let _ = runtime::GcStart::parse(p, version, ptr);
    let _ = runtime::GcEnd::parse(p, version, ptr);
    let _ = runtime::GcHeapStats::parse(p, version, ptr);
    let _ = runtime::GcGlobalHeapHistory::parse(p, version, ptr);
    let _ = runtime::GcSuspendEe::parse(p, version, ptr);
    let _ = runtime::GcRestartEeEnd::parse(p, version, ptr);
    let _ = runtime::AllocationTick::parse(p, version, ptr);
    let _ = runtime::ExceptionThrown::parse(p, version, ptr);
    let _ = runtime::ExceptionCatch::parse(p, version, ptr);
    let _ = runtime::ContentionStart::parse(p, version, ptr);
    let _ = runtime::ContentionStop::parse(p, version, ptr);
    let _ = runtime::ThreadPoolAdjustment::parse(p, version, ptr);

    if let Ok(v) = heapdump::GcBulkNode::parse(p, version, ptr) {
        drain(v.values, p.len());
    }
    if let Ok(v) = heapdump::GcBulkEdge::parse(p, version, ptr) {
        drain(v.values, p.len());
    }
    if let Ok(v) = heapdump::GcBulkRootEdge::parse(p, version, ptr) {
        drain(v.values, p.len());
    }
    if let Ok(v) = heapdump::GcBulkType::parse(p, version, ptr) {
        drain(v.values, p.len());
    }
    if let Ok(v) = heapdump::GcBulkRootStaticVar::parse(p, version, ptr) {
        drain(v.values, p.len());
    }
    if let Ok(v) = heapdump::GcBulkSurvivingObjectRanges::parse(p, version, ptr) {
        drain(v.values, p.len());
    }
    if let Ok(v) = heapdump::GcBulkMovedObjectRanges::parse(p, version, ptr) {
        drain(v.values, p.len());
    }

    let _ = clrspy::ThreadCpu::parse(p);
    let _ = clrspy::CgroupCpu::parse(p);
    let _ = clrspy::RecorderCpu::parse(p);
    let _ = clrspy::ThreadName::parse(p);
    let _ = clrspy::SamplerInfo::parse(p);
    let _ = clrspy::Trigger::parse(p);
    let _ = clrspy::Ring::parse(p);
    let _ = clrspy::ModuleMap::parse(p);
    let _ = clrspy::R2rMethod::parse(p);
    let _ = clrspy::R2rImage::parse(p);
});
