//! An entry's payload as the broker sends it: decompressed as its metadata says, and a batched
//! entry split into its messages' payloads. Shared by the reader and the consumer.

use pulsar::message::proto::{self, CompressionType, MessageMetadata};

/// Decompress an entry's payload.
pub fn decompress(md: &MessageMetadata, data: Vec<u8>) -> Result<Vec<u8>, String> {
    let size = md.uncompressed_size.unwrap_or(0) as usize;
    let kind =
        CompressionType::try_from(md.compression.unwrap_or(0)).unwrap_or(CompressionType::None);
    match kind {
        CompressionType::None => Ok(data),
        _ => decompress_with(kind, size, data),
    }
}

#[cfg(feature = "compression")]
fn decompress_with(kind: CompressionType, size: usize, data: Vec<u8>) -> Result<Vec<u8>, String> {
    match kind {
        CompressionType::None => Ok(data),
        CompressionType::Lz4 => {
            lz4::block::decompress(&data, Some(size as i32)).map_err(|e| format!("lz4: {e}"))
        }
        CompressionType::Zlib => {
            use std::io::Read;
            let mut out = Vec::with_capacity(size);
            flate2::read::ZlibDecoder::new(&data[..])
                .read_to_end(&mut out)
                .map_err(|e| format!("zlib: {e}"))?;
            Ok(out)
        }
        CompressionType::Zstd => {
            zstd::bulk::decompress(&data, size.max(1)).map_err(|e| format!("zstd: {e}"))
        }
        CompressionType::Snappy => snap::raw::Decoder::new()
            .decompress_vec(&data)
            .map_err(|e| format!("snappy: {e}")),
    }
}

#[cfg(not(feature = "compression"))]
fn decompress_with(kind: CompressionType, _size: usize, _data: Vec<u8>) -> Result<Vec<u8>, String> {
    Err(format!(
        "{kind:?}: this pulsar-chaos was built without the `compression` feature"
    ))
}

/// Split a batched entry into its messages' payloads.
pub fn split_batch(data: &[u8], count: i32) -> Result<Vec<&[u8]>, String> {
    use prost::Message as _;
    let mut out = Vec::with_capacity(count.max(0) as usize);
    let mut pos = 0usize;
    for _ in 0..count {
        if pos + 4 > data.len() {
            return Err("batch shorter than its count".into());
        }
        let n = u32::from_be_bytes(data[pos..pos + 4].try_into().expect("4 bytes")) as usize;
        pos += 4;
        if pos + n > data.len() {
            return Err("batch member metadata past the end".into());
        }
        let smd =
            proto::SingleMessageMetadata::decode(&data[pos..pos + n]).map_err(|e| e.to_string())?;
        pos += n;
        let size = smd.payload_size.max(0) as usize;
        if pos + size > data.len() {
            return Err("batch member payload past the end".into());
        }
        out.push(&data[pos..pos + size]);
        pos += size;
    }
    Ok(out)
}
