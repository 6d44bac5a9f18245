"""API signatures the generated traces print: clang's ``__PRETTY_FUNCTION__`` of each
extern "C" function and the arguments MIOPEN_LOG_FUNCTION logs, per MIOpen release."""

from __future__ import annotations

# --------------------------------------------------------------------------------------
# Function signatures and logged argument names, per MIOpen release.
#
# The header of an API block is clang's __PRETTY_FUNCTION__ of the extern "C" function
# (types only) and the params are the MIOPEN_LOG_FUNCTION arguments in macro order; both
# were read from src/*_api.cpp at tags 1.7.1, rocm-4.0.0 and rocm-5.7.0.  1.7.1 logs no
# handle; rocm-4.0.0 still omits xDesc from the forward workspace query; rocm-5.7.0 spells
# the Set-tensor arrays `const int *`.
# --------------------------------------------------------------------------------------

_T = "const miopenTensorDescriptor_t"
_CONV_RUN_TYPES = ("miopenHandle_t, const void *, " + _T + ", const void *, " + _T
                   + ", const void *, const miopenConvolutionDescriptor_t, {algo}, const void *, "
                   + _T + ", void *, void *, size_t")
_FIND_TYPES = ("miopenHandle_t, " + _T + ", const void *, " + _T + ", const void *, "
               "const miopenConvolutionDescriptor_t, " + _T + ", {out}, const int, int *, "
               "miopenConvAlgoPerf_t *, void *, size_t, bool")
_WS_TYPES = "miopenHandle_t, " + _T + ", " + _T + ", const miopenConvolutionDescriptor_t, " + _T + ", size_t *"


def api_signatures(version: str) -> dict[str, tuple[str, tuple[str, ...]]]:
    """Header text and logged parameter names of every API function the generator uses."""
    handle = () if version == "1.7" else ("handle",)
    set_arrays = "const int *, const int *" if version == "5.7" else "int *, int *"
    s: dict[str, tuple[str, tuple[str, ...]]] = {
        "miopenCreateTensorDescriptor": ("miopenTensorDescriptor_t *", ("tensorDesc",)),
        "miopenSet4dTensorDescriptor": ("miopenTensorDescriptor_t, miopenDataType_t, int, int, int, int",
                                        ("tensorDesc", "dataType", "n", "c", "h", "w")),
        "miopenSetTensorDescriptor": ("miopenTensorDescriptor_t, miopenDataType_t, int, " + set_arrays,
                                      ("tensorDesc", "dataType", "nbDims", "dim.values", "stride.values")),
        "miopenCreateConvolutionDescriptor": ("miopenConvolutionDescriptor_t *", ("convDesc",)),
        "miopenInitConvolutionDescriptor": (
            "miopenConvolutionDescriptor_t, miopenConvolutionMode_t, int, int, int, int, int, int",
            ("convDesc", "c_mode", "pad_h", "pad_w")
            + (("u", "v") if version == "1.7" else ("stride_h", "stride_w"))
            + ("dilation_h", "dilation_w")),
        "miopenConvolutionForwardGetWorkSpaceSize": (
            _WS_TYPES,
            handle + (("wDesc", "xDesc", "convDesc", "yDesc", "workSpaceSize") if version == "5.7"
                      else ("wDesc", "yDesc", "convDesc", "workSpaceSize"))),
        "miopenConvolutionBackwardDataGetWorkSpaceSize": (
            _WS_TYPES, handle + ("dyDesc", "wDesc", "convDesc", "dxDesc", "workSpaceSize")),
        "miopenConvolutionBackwardWeightsGetWorkSpaceSize": (
            _WS_TYPES, handle + ("dyDesc", "xDesc", "convDesc", "dwDesc", "workSpaceSize")),
        "miopenFindConvolutionForwardAlgorithm": (
            _FIND_TYPES.format(out="void *"),
            handle + ("xDesc", "x", "wDesc", "w", "convDesc", "yDesc", "y", "requestAlgoCount",
                      "returnedAlgoCount", "perfResults", "workSpace", "workSpaceSize", "exhaustiveSearch")),
        "miopenFindConvolutionBackwardDataAlgorithm": (
            _FIND_TYPES.format(out="const void *" if version == "1.7" else "void *"),
            handle + ("dyDesc", "dy", "wDesc", "w", "convDesc", "dxDesc", "dx", "requestAlgoCount",
                      "returnedAlgoCount", "perfResults", "workSpace", "workSpaceSize", "exhaustiveSearch")),
        "miopenFindConvolutionBackwardWeightsAlgorithm": (
            _FIND_TYPES.format(out="void *"),
            handle + ("dyDesc", "dy", "xDesc", "x", "convDesc", "dwDesc", "dw", "requestAlgoCount",
                      "returnedAlgoCount", "perfResults", "workSpace", "workSpaceSize", "exhaustiveSearch")),
        "miopenConvolutionForward": (
            _CONV_RUN_TYPES.format(algo="miopenConvFwdAlgorithm_t"),
            handle + ("alpha", "xDesc", "x", "wDesc", "w", "convDesc", "algo", "beta", "yDesc", "y",
                      "workSpace", "workSpaceSize")),
        "miopenConvolutionBackwardData": (
            _CONV_RUN_TYPES.format(algo="miopenConvBwdDataAlgorithm_t"),
            handle + ("alpha", "dyDesc", "dy", "wDesc", "w", "convDesc", "algo", "beta", "dxDesc", "dx",
                      "workSpace", "workSpaceSize")),
        "miopenConvolutionBackwardWeights": (
            _CONV_RUN_TYPES.format(algo="miopenConvBwdWeightsAlgorithm_t"),
            handle + ("alpha", "dyDesc", "dy", "xDesc", "x", "convDesc", "algo", "beta", "dwDesc", "dw",
                      "workSpace", "workSpaceSize")),
        "miopenDeriveBNTensorDescriptor": (
            "miopenTensorDescriptor_t, " + _T + ", miopenBatchNormMode_t", ("derivedBnDesc", "xDesc", "bn_mode")),
        "miopenBatchNormalizationForwardTraining": (
            "miopenHandle_t, miopenBatchNormMode_t, void *, void *, " + _T + ", const void *, " + _T
            + ", void *, " + _T + ", void *, void *, double, void *, void *, double, void *, void *",
            handle + ("bn_mode", "xDesc", "x", "yDesc", "y", "bnScaleBiasMeanVarDesc", "bnScale", "bnBias",
                      "expAvgFactor", "resultRunningMean", "resultRunningVariance", "epsilon",
                      "resultSaveMean", "resultSaveInvVariance")),
        "miopenBatchNormalizationBackward": (
            "miopenHandle_t, miopenBatchNormMode_t, const void *, const void *, const void *, const void *, "
            + _T + ", const void *, " + _T + ", const void *, " + _T + ", void *, " + _T
            + ", const void *, void *, void *, double, const void *, const void *",
            handle + ("bn_mode", "xDesc", "x", "dyDesc", "dy", "dxDesc", "dx", "bnScaleBiasDiffDesc",
                      "bnScale", "resultBnScaleDiff", "resultBnBiasDiff", "epsilon", "savedMean",
                      "savedInvVariance")),
        "miopenBatchNormalizationForwardInference": (
            "miopenHandle_t, miopenBatchNormMode_t, void *, void *, " + _T + ", const void *, " + _T
            + ", void *, " + _T + ", void *, void *, void *, void *, double",
            handle + ("bn_mode", "xDesc", "x", "yDesc", "y", "bnScaleBiasMeanVarDesc", "bnScale", "bnBias",
                      "estimatedMean", "estimatedVariance", "epsilon")),
        "miopenCreatePoolingDescriptor": ("miopenPoolingDescriptor_t *", ("poolDesc",)),
        "miopenSet2dPoolingDescriptor": (
            "miopenPoolingDescriptor_t, miopenPoolingMode_t, int, int, int, int, int, int",
            ("poolDesc", "mode", "windowHeight", "windowWidth", "pad_h", "pad_w")
            + (("u", "v") if version == "1.7" else ("stride_h", "stride_w"))),
        "miopenPoolingGetWorkSpaceSize": ("const miopenTensorDescriptor_t, size_t *", ("yDesc", "workSpaceSize")),
        "miopenPoolingGetWorkSpaceSizeV2": ("const miopenPoolingDescriptor_t, " + _T + ", size_t *",
                                            ("poolDesc", "yDesc", "workSpaceSize")),
        "miopenPoolingForward": (
            "miopenHandle_t, const miopenPoolingDescriptor_t, const void *, " + _T + ", const void *, "
            "const void *, " + _T + ", void *, bool, void *, size_t",
            handle + ("poolDesc", "alpha", "xDesc", "x", "beta", "yDesc", "y", "do_backward", "workSpace",
                      "workSpaceSize")),
        "miopenPoolingBackward": (
            "miopenHandle_t, const miopenPoolingDescriptor_t, const void *, " + _T + ", const void *, " + _T
            + ", const void *, " + _T + ", const void *, const void *, " + _T + ", void *, "
            + ("void *" if version == "5.7" else "const void *"),
            handle + ("poolDesc", "alpha", "yDesc", "y", "dyDesc", "dy", "xDesc", "x", "beta", "dxDesc", "dx",
                      "workSpace")),
        "miopenCreateActivationDescriptor": ("miopenActivationDescriptor_t *", ("activDesc",)),
        "miopenSetActivationDescriptor": (
            "miopenActivationDescriptor_t, miopenActivationMode_t, double, double, double",
            ("activDesc", "mode", "activAlpha", "activBeta", "activGamma")),
        "miopenActivationForward": (
            "miopenHandle_t, miopenActivationDescriptor_t, const void *, " + _T + ", const void *, "
            "const void *, " + _T + ", void *",
            handle + ("activDesc", "alpha", "xDesc", "x", "beta", "yDesc", "y")),
        "miopenActivationBackward": (
            "miopenHandle_t, miopenActivationDescriptor_t, const void *, " + _T + ", const void *, " + _T
            + ", const void *, " + _T + ", const void *, const void *, " + _T + ", void *",
            handle + ("activDesc", "alpha", "yDesc", "y", "dyDesc", "dy", "xDesc", "x", "beta", "dxDesc", "dx")),
    }
    return {name: (f"miopenStatus_t {name}({types}){{", params) for name, (types, params) in s.items()}


SIGS = {v: api_signatures(v) for v in ("1.7", "2.9", "5.7")}
FORMAT_VERSION = {"trace2018": "1.7", "trace2x": "2.9", "trace55": "5.7", "command": "5.7", "info": "5.7"}
