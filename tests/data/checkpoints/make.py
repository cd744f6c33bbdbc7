#!/usr/bin/env python3
"""Regenerates the tiny fake checkpoints used by the inspect tests.

Each folder holds a config.json (keys as the real families spell them), an
optional hf_quant_config.json and one or two small .safetensors files whose
headers look like the real ones (packed FP4 weights as U8, FP8 block scales,
F32 global scales). The data sections are zeros. Run from this folder."""
import json, os, struct

def st(path, tensors, meta=None):
    """tensors: list of (name, dtype, shape); writes header + zeroed data."""
    size = {"U8": 1, "F8_E4M3": 1, "F32": 4, "BF16": 2, "F16": 2, "I32": 4}
    hdr, off = {}, 0
    if meta:
        hdr["__metadata__"] = meta
    for name, dt, shape in tensors:
        n = size[dt]
        for d in shape:
            n *= d
        hdr[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + n]}
        off += n
    h = json.dumps(hdr, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + bytes(off))

def nvfp4_expert(prefix, hidden, inter):
    out = []
    for proj, shape in (("up_proj", [inter, hidden // 2]), ("down_proj", [hidden, inter // 2])):
        out += [(f"{prefix}.{proj}.weight", "U8", shape),
                (f"{prefix}.{proj}.weight_scale", "F8_E4M3", [shape[0], shape[1] * 2 // 16]),
                (f"{prefix}.{proj}.weight_scale_2", "F32", []),
                (f"{prefix}.{proj}.input_scale", "F32", [])]
    return out

def write(folder, config, quant=None, shards=()):
    os.makedirs(folder, exist_ok=True)
    with open(f"{folder}/config.json", "w") as f:
        json.dump(config, f, indent=2)
    if quant:
        with open(f"{folder}/hf_quant_config.json", "w") as f:
            json.dump(quant, f, indent=2)
    for name, tensors in shards:
        st(f"{folder}/{name}", tensors, {"format": "pt"})

# Nemotron-3-Super-like: hybrid Mamba/attention/MoE, relu2, ModelOpt NVFP4 W4A4, FP8 KV
write("nemotron-h-nvfp4", {
    "architectures": ["NemotronHForCausalLM"], "model_type": "nemotron_h",
    "hidden_size": 4096, "num_hidden_layers": 12,
    "hybrid_override_pattern": "MEM*EMEM*EME",
    "n_routed_experts": 512, "num_experts_per_tok": 22, "n_shared_experts": 1,
    "moe_intermediate_size": 2688, "mlp_hidden_act": "relu2"},
    {"producer": {"name": "modelopt", "version": "0.37.0"},
     "quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8", "group_size": 16,
                      "exclude_modules": ["lm_head", "model.layers.0.mixer"]}},
    [("model-00001-of-00002.safetensors", nvfp4_expert("model.layers.1.mixer.experts.0", 64, 32)),
     ("model-00002-of-00002.safetensors", [("lm_head.weight", "BF16", [16, 64])])])

# Qwen3-MoE-like, compressed-tensors weight-only NVFP4 (W4A16)
write("qwen3-moe-w4a16", {
    "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe",
    "hidden_size": 2048, "num_hidden_layers": 4, "num_experts": 128, "num_experts_per_tok": 8,
    "moe_intermediate_size": 768, "hidden_act": "silu",
    "quantization_config": {
        "quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized",
        "config_groups": {"group_0": {"targets": ["Linear"], "input_activations": None,
                                      "weights": {"num_bits": 4, "type": "float", "group_size": 16,
                                                  "strategy": "tensor_group"}}},
        "ignore": ["lm_head", "re:.*mlp.gate$"]}},
    None,
    [("model.safetensors", [("model.layers.0.mlp.experts.0.up_proj.weight_packed", "U8", [32, 32]),
                            ("model.layers.0.mlp.experts.0.up_proj.weight_scale", "F8_E4M3", [32, 4]),
                            ("model.layers.0.mlp.experts.0.up_proj.weight_global_scale", "F32", [1]),
                            ("lm_head.weight", "BF16", [8, 64])])])

# gpt-oss-like: num_local_experts, experts_per_token, swiglu clamp, modelopt in config.json
write("swiglu-clamp", {
    "architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss",
    "hidden_size": 2880, "num_hidden_layers": 2, "num_local_experts": 32, "experts_per_token": 4,
    "intermediate_size": 2880, "hidden_act": "swigluoai", "swiglu_limit": 7.0,
    "quantization_config": {"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16,
                            "exclude_modules": ["lm_head"]}},
    None,
    [("model.safetensors", nvfp4_expert("model.layers.0.mlp.experts.0", 32, 32))])

# Mistral-Small-4-like: multimodal wrapper, MoE keys under text_config, no weights here
write("multimodal-moe", {
    "architectures": ["Mistral3ForConditionalGeneration"], "model_type": "mistral3",
    "text_config": {"model_type": "mistral4", "hidden_size": 4096, "num_hidden_layers": 36,
                    "n_routed_experts": 128, "num_experts_per_tok": 4,
                    "moe_intermediate_size": 1792, "hidden_act": "silu"}})

# dense model, no quantization
write("dense", {"architectures": ["LlamaForCausalLM"], "model_type": "llama",
                "hidden_size": 2048, "intermediate_size": 5632, "hidden_act": "silu"},
      None, [("model.safetensors", [("model.embed_tokens.weight", "BF16", [16, 32])])])
