/* kiln/bundle.h — kernels compiled on one machine to run on another: the one bundle format of
 * Kiln and its one reader.
 *
 * A GPU machine has no LLVM/MLIR, so the kernels it runs are compiled elsewhere and carried
 * over in a bundle: a folder with one file per build of a module, named
 *
 *     NAME.ARCH.EXT      ARCH: sm_XY (PTX or cubin built for compute capability X.Y),
 *                              cpu or emu (host objects compiled for that device's target);
 *                        EXT:  cubin, ptx, o (host object) or so (host shared object)
 *
 * so one folder can hold a module for several GPUs at once (a cubin each, plus PTX). The reader
 * gathers the images of NAME and lets kiln_rt_module_load_best pick the one the device runs (the
 * cubin of its arch, else of a lower minor of its major, else the newest PTX it can JIT; on cpu
 * and emu the host image built for that device), so that no user picks an architecture by file
 * name. Its users: the numeric and BERT kernel tests' precompiled kernels
 * (tests/common/kernel_run.c), bench/gpu's benchmark kernels, and the tuner's candidates
 * (`kiln tune --emit-bundle`, kiln-tune-runner). */
#ifndef KILN_BUNDLE_H
#define KILN_BUNDLE_H

#include <kiln/kilnrt.h>

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The most images of one module a bundle may hold (more is an error that says so). */
#define KILN_RT_BUNDLE_MAX_IMAGES 16

/* Writes the file name of one image, NAME.ARCH.EXT (EXT from format), into buf. 0, or -1 when
 * it does not fit in cap, when name is empty or holds a '/', or for an unknown format. */
int kiln_rt_bundle_image_name(char *buf, size_t cap, const char *name, const char *arch,
                              KilnRtModuleFormat format);

/* Loads module `name` of the bundle folder `dir` on dev: every file dir/NAME.ARCH.EXT whose ARCH
 * suits the device (sm_XY on cuda; cpu on the cpu device, emu on emu) is read and
 * kiln_rt_module_load_best picks among them. *out is owned by the caller
 * (kiln_rt_module_destroy). Errors, each with a message naming the folder and the module
 * (kiln_rt_last_error): INVALID_ARGUMENT for NULL or empty arguments and past
 * KILN_RT_BUNDLE_MAX_IMAGES images; NOT_FOUND when the folder cannot be read or holds no image
 * of the module for this device (the message lists the module's images it has); IO for an image
 * file that cannot be read; LOAD for an empty one; UNSUPPORTED when none of the images runs on
 * the device; else as kiln_rt_module_load (a truncated image fails to load there). */
KilnRtStatus kiln_rt_bundle_load(KilnRtDevice *dev, const char *dir, const char *name,
                                 KilnRtModule **out);

/* The images of module `name` in `dir` that a device of `kind` may load, read whole and not
 * loaded: images[0..*n) with their file names in files[] (arrays of KILN_RT_BUNDLE_MAX_IMAGES),
 * for a program that embeds them (kiln-tune-runner --tuned-libs). Errors as kiln_rt_bundle_load's
 * before it loads; on an error *n images may still be held. Free them with
 * kiln_rt_bundle_images_free. */
KilnRtStatus kiln_rt_bundle_read_images(const char *dir, const char *name, KilnRtDeviceKind kind,
                                        KilnRtImage *images, char **files, size_t *n);
void kiln_rt_bundle_images_free(KilnRtImage *images, char **files, size_t n);

#ifdef __cplusplus
}
#endif

#endif /* KILN_BUNDLE_H */
