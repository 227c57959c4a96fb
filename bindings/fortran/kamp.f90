! kamp's Fortran module: a training session for a Fortran science code. Arrays of any rank, real
! or integer kind and stride are passed as they lie (assumed rank, read through
! ISO_Fortran_binding descriptors): nothing is transposed or copied. By default the last
! dimension is the batch and the others, first index fastest, the features; batch_dims = n takes
! the last n dimensions as the batch, batch_dims = -n the first n. Every function returns a
! status (KAMP_OK = 0); kamp_last_error() says what went wrong. docs/science-codes.md.
module kamp
  use, intrinsic :: iso_c_binding, only: c_ptr, c_null_ptr, c_int, c_int32_t, c_int64_t, c_double, c_float, &
                                         c_char, c_null_char, c_size_t, c_f_pointer
  implicit none
  private

  integer(c_int), parameter, public :: KAMP_OK = 0, KAMP_ERROR_INVALID_HANDLE = 1, KAMP_ERROR_INVALID_ARGUMENT = 2, &
                                       KAMP_ERROR_CONFIG = 3, KAMP_ERROR_IO = 4, KAMP_ERROR_UNSUPPORTED = 5, &
                                       KAMP_ERROR_INTERNAL = 6
  integer(c_int32_t), parameter, public :: KAMP_HOST = 0, KAMP_CUDA = 1, KAMP_HIP = 2

  !> A session: create it with kamp_create, free it with kamp_destroy.
  type, public :: kamp_session
    type(c_ptr) :: handle = c_null_ptr
  end type kamp_session

  !> kamp_get_report's counters (the C API's kamp_report).
  type, bind(c), public :: kamp_report
    integer(c_int64_t) :: train_steps = 0, optimizer_steps = 0, skipped_steps = 0
    integer(c_int32_t) :: last_skip_cause = 0
    real(c_double) :: loss = 0
    real(c_float) :: loss_scale = 1, grad_norm = 0
  end type kamp_report

  type, bind(c) :: session_options
    integer(c_int32_t) :: use_mpi = 0, mpi_comm = 0
    type(c_ptr) :: stream = c_null_ptr
  end type session_options

  public :: kamp_create, kamp_create_from_text, kamp_destroy, kamp_train, kamp_predict, kamp_loss, &
            kamp_get_report, kamp_save, kamp_load, kamp_last_error, kamp_finalize

  interface
    integer(c_int) function c_create(session, config, options) bind(c, name="kamp_session_create")
      import :: c_ptr, c_int, c_char, session_options
      type(c_ptr), intent(out) :: session
      character(kind=c_char), dimension(*), intent(in) :: config
      type(session_options), intent(in) :: options
    end function c_create
    integer(c_int) function c_create_from_text(session, text, options) bind(c, name="kamp_session_create_from_text")
      import :: c_ptr, c_int, c_char, session_options
      type(c_ptr), intent(out) :: session
      character(kind=c_char), dimension(*), intent(in) :: text
      type(session_options), intent(in) :: options
    end function c_create_from_text
    integer(c_int) function c_destroy(session) bind(c, name="kamp_session_destroy")
      import :: c_ptr, c_int
      type(c_ptr), intent(inout) :: session
    end function c_destroy
    integer(c_int) function c_train(session, inputs, labels, batch_dims, device) bind(c, name="kamp_fortran_train_step")
      import :: c_ptr, c_int, c_int32_t
      type(c_ptr), value :: session
      type(*), dimension(..), intent(in) :: inputs, labels
      integer(c_int32_t), value :: batch_dims, device
    end function c_train
    integer(c_int) function c_predict(session, inputs, outputs, batch_dims, device) bind(c, name="kamp_fortran_predict")
      import :: c_ptr, c_int, c_int32_t
      type(c_ptr), value :: session
      type(*), dimension(..), intent(in) :: inputs
      type(*), dimension(..), intent(inout) :: outputs
      integer(c_int32_t), value :: batch_dims, device
    end function c_predict
    integer(c_int) function c_loss(session, loss) bind(c, name="kamp_session_loss")
      import :: c_ptr, c_int, c_double
      type(c_ptr), value :: session
      real(c_double), intent(out) :: loss
    end function c_loss
    integer(c_int) function c_report(session, report) bind(c, name="kamp_session_report")
      import :: c_ptr, c_int, kamp_report
      type(c_ptr), value :: session
      type(kamp_report), intent(out) :: report
    end function c_report
    integer(c_int) function c_save(session, path) bind(c, name="kamp_session_save")
      import :: c_ptr, c_int, c_char
      type(c_ptr), value :: session
      character(kind=c_char), dimension(*), intent(in) :: path
    end function c_save
    integer(c_int) function c_load(session, path) bind(c, name="kamp_session_load")
      import :: c_ptr, c_int, c_char
      type(c_ptr), value :: session
      character(kind=c_char), dimension(*), intent(in) :: path
    end function c_load
    type(c_ptr) function c_last_error() bind(c, name="kamp_last_error")
      import :: c_ptr
    end function c_last_error
    integer(c_int) function c_finalize() bind(c, name="kamp_finalize")
      import :: c_int
    end function c_finalize
    integer(c_size_t) function c_strlen(s) bind(c, name="strlen")
      import :: c_ptr, c_size_t
      type(c_ptr), value :: s
    end function c_strlen
  end interface

contains

  !> The options of a create call: comm is an MPI communicator's integer handle (mpi_f08:
  !> comm%MPI_VAL), stream a CUDA or HIP stream.
  type(session_options) function options_of(comm, stream) result(o)
    integer, intent(in), optional :: comm
    type(c_ptr), intent(in), optional :: stream
    if (present(comm)) then
      o%use_mpi = 1
      o%mpi_comm = int(comm, c_int32_t)
    end if
    if (present(stream)) o%stream = stream
  end function options_of

  !> A session from a YAML or JSON config file (TorchFort's mlp files included).
  integer function kamp_create(session, config_file, comm, stream) result(status)
    type(kamp_session), intent(out) :: session
    character(len=*), intent(in) :: config_file
    integer, intent(in), optional :: comm
    type(c_ptr), intent(in), optional :: stream
    status = c_create(session%handle, trim(config_file) // c_null_char, options_of(comm, stream))
  end function kamp_create

  !> A session from the text of a config.
  integer function kamp_create_from_text(session, config_text, comm, stream) result(status)
    type(kamp_session), intent(out) :: session
    character(len=*), intent(in) :: config_text
    integer, intent(in), optional :: comm
    type(c_ptr), intent(in), optional :: stream
    status = c_create_from_text(session%handle, config_text // c_null_char, options_of(comm, stream))
  end function kamp_create_from_text

  integer function kamp_destroy(session) result(status)
    type(kamp_session), intent(inout) :: session
    status = c_destroy(session%handle)
  end function kamp_destroy

  !> One training step on inputs and labels (nothing waits for the device).
  integer function kamp_train(session, inputs, labels, batch_dims, device) result(status)
    type(kamp_session), intent(in) :: session
    type(*), dimension(..), intent(in) :: inputs, labels
    integer, intent(in), optional :: batch_dims, device
    status = c_train(session%handle, inputs, labels, dims_of(batch_dims), device_of(device))
  end function kamp_train

  !> The network's outputs for inputs, written into outputs (real kinds).
  integer function kamp_predict(session, inputs, outputs, batch_dims, device) result(status)
    type(kamp_session), intent(in) :: session
    type(*), dimension(..), intent(in) :: inputs
    type(*), dimension(..), intent(inout) :: outputs
    integer, intent(in), optional :: batch_dims, device
    status = c_predict(session%handle, inputs, outputs, dims_of(batch_dims), device_of(device))
  end function kamp_predict

  !> The last micro-batch's mean loss (waits for the device).
  integer function kamp_loss(session, loss) result(status)
    type(kamp_session), intent(in) :: session
    real(c_double), intent(out) :: loss
    status = c_loss(session%handle, loss)
  end function kamp_loss

  integer function kamp_get_report(session, report) result(status)
    type(kamp_session), intent(in) :: session
    type(kamp_report), intent(out) :: report
    status = c_report(session%handle, report)
  end function kamp_get_report

  !> Weights, optimizer state and counters to HDF5 (h5py: f["model/layers.0.weight"]).
  integer function kamp_save(session, path) result(status)
    type(kamp_session), intent(in) :: session
    character(len=*), intent(in) :: path
    status = c_save(session%handle, trim(path) // c_null_char)
  end function kamp_save

  integer function kamp_load(session, path) result(status)
    type(kamp_session), intent(in) :: session
    character(len=*), intent(in) :: path
    status = c_load(session%handle, trim(path) // c_null_char)
  end function kamp_load

  !> The message of this thread's last failed call.
  function kamp_last_error() result(message)
    character(len=:), allocatable :: message
    character(kind=c_char), dimension(:), pointer :: chars
    type(c_ptr) :: p
    integer :: n, i
    p = c_last_error()
    n = int(c_strlen(p))
    call c_f_pointer(p, chars, [n])
    allocate(character(len=n) :: message)
    do i = 1, n
      message(i:i) = chars(i)
    end do
  end function kamp_last_error

  integer function kamp_finalize() result(status)
    status = c_finalize()
  end function kamp_finalize

  integer(c_int32_t) function dims_of(batch_dims)
    integer, intent(in), optional :: batch_dims
    dims_of = 1
    if (present(batch_dims)) dims_of = int(batch_dims, c_int32_t)
  end function dims_of

  integer(c_int32_t) function device_of(device)
    integer, intent(in), optional :: device
    device_of = KAMP_HOST
    if (present(device)) device_of = int(device, c_int32_t)
  end function device_of

end module kamp
